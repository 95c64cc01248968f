"""The helpers the bundled servers share: fetching a file_url, V2 artifacts."""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp.exceptions import ToolError

from tests.unit.mcp_servers.conftest import SIGNATURE

SIGNED = f"/api/files/abc_DEF-1/content?u=alice%40example.com&e=1700000000&s={SIGNATURE}"


async def test_fetch_reads_the_body_and_the_download_name(common, file_server):
    url = file_server.add("f1", b"hello", "text/plain", "Ünïcode name.csv")

    fetched = await common.fetch_file(url)

    assert (fetched.data, fetched.name) == (b"hello", "Ünïcode name.csv")
    assert fetched.content_type == "text/plain"


@pytest.mark.parametrize("content_length", [True, False], ids=["declared", "streamed"])
async def test_fetch_refuses_files_over_the_limit(common, file_server, content_length):
    url = file_server.add("big", b"x" * 5000, "text/plain", content_length=content_length)

    with pytest.raises(ToolError, match=r"^the file is larger than the limit of 4,096 bytes$"):
        await common.fetch_file(url, max_bytes=4096)


async def test_fetch_reports_server_failures(common, file_server):
    with pytest.raises(ToolError, match=r"^the file server failed \(HTTP 500\); try again later$"):
        await common.fetch_file(file_server.url("broken"))


async def test_fetch_reports_unreachable_hosts(common):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    with pytest.raises(ToolError, match=r"could not download the file \(ConnectError\)"):
        await common.fetch_file(f"http://127.0.0.1:{port}/api/files/f1/content?u=a&e=1&s={SIGNATURE}")


async def test_fetch_local_file_only_when_allowed(common, tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n")

    with pytest.raises(ToolError, match="local file paths are not accepted"):
        await common.fetch_file(path.as_uri())
    assert (await common.fetch_file(path.as_uri(), allow_local=True)).data == b"a,b\n"
    with pytest.raises(ToolError, match="no such file"):
        await common.fetch_file(str(tmp_path / "missing.csv"), allow_local=True)


# -- only the host's own signed file links are fetched (no SSRF) ---------------------
@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/admin",  # an internal service
        "http://127.0.0.1:{port}/api/files/f1/content",  # no signature
        "http://127.0.0.1:{port}/api/files/f1/content?u=a&e=1",
        f"http://127.0.0.1:{{port}}/api/files/f1/content?u=a&e=1&s={SIGNATURE}&next=/admin",
        f"http://127.0.0.1:{{port}}/api/files/f1/content?u=a&e=soon&s={SIGNATURE}",
        "http://127.0.0.1:{port}/api/files/f1/content?u=a&e=1&s=nothex",
        f"http://127.0.0.1:{{port}}/api/files/../admin/content?u=a&e=1&s={SIGNATURE}",
        f"http://127.0.0.1:{{port}}/api/files/f1/content/more?u=a&e=1&s={SIGNATURE}",
        f"http://127.0.0.1:{{port}}/x/api/files/f1/content?u=a&e=1&s={SIGNATURE}",  # no prefix configured
        f"http://user:pw@127.0.0.1:{{port}}/api/files/f1/content?u=a&e=1&s={SIGNATURE}",
        f"http://127.0.0.1:{{port}}/api/files/f1/content?u=a&e=1&s={SIGNATURE}#frag",
    ],
)
async def test_fetch_refuses_links_that_are_not_signed_file_links(common, file_server, url):
    file_server.add("f1", b"user file", "text/plain")
    link = url.replace("{port}", file_server.base.rsplit(":", 1)[1])

    with pytest.raises(ToolError, match=r"^refused the file link .*attach the file"):
        await common.fetch_file(link)
    assert file_server.requests == []  # nothing was even asked


@pytest.mark.parametrize(
    "host", ["169.254.169.254", "10.0.0.5", "internal.example", "127.0.0.1.nip.io", "[::ffff:127.0.0.1]"]
)
async def test_fetch_refuses_other_hosts_when_no_origin_is_configured(common, host):
    with pytest.raises(ToolError, match="it is not on this machine"):
        await common.fetch_file(f"http://{host}{SIGNED}")


async def test_fetch_never_follows_a_redirect(common, file_server):
    with pytest.raises(ToolError, match=r"redirect \(HTTP 302\), which is not followed"):
        await common.fetch_file(file_server.redirect("moved", f"{file_server.base}/admin"))
    assert file_server.requests == ["/api/files/moved/content"]  # the internal /admin was never asked


async def test_fetch_accepts_only_the_hosts_configured_origin(common, file_server, monkeypatch):
    file_server.add("f1", b"user file", "text/plain")
    monkeypatch.setenv("SWITCHBOARD_FILES_ORIGIN", file_server.base + "/")
    assert (await common.fetch_file(file_server.url("f1"))).data == b"user file"

    monkeypatch.setenv("SWITCHBOARD_FILES_ORIGIN", "https://chat.example.com")
    with pytest.raises(ToolError, match="it is not on the host's own origin"):
        await common.fetch_file(file_server.url("f1"))  # even on localhost


def test_the_origin_may_carry_a_path_prefix_and_default_ports(common):
    problem = common.host_file_link_problem
    origin = "https://Chat.Example.com/switchboard"

    assert problem(f"https://chat.example.com/switchboard{SIGNED}", origin) is None
    assert problem(f"https://chat.example.com:443/switchboard{SIGNED}", origin) is None
    assert problem(f"https://chat.example.com{SIGNED}", origin) == "its path is not /api/files/{id}/content"
    assert problem(f"http://chat.example.com/switchboard{SIGNED}", origin) == "it is not on the host's own origin"
    assert problem(f"https://chat.example.com:8443/switchboard{SIGNED}", origin) == "it is not on the host's own origin"
    assert problem(f"https://evil.example/switchboard{SIGNED}", origin) == "it is not on the host's own origin"
    assert problem(f"http://localhost:8000{SIGNED}", "") is None
    assert problem(f"http://[::1]:8000{SIGNED}", "") is None
    assert problem(f"http://localhost:99999{SIGNED}", "") == "it is not a valid URL"
    assert "is not a valid URL; fix the environment" in problem(f"http://localhost:8000{SIGNED}", "http://h:port")


async def test_pdfbasic_refuses_an_internal_url_the_model_chose(pdfbasic_mcp, file_server):
    from fastmcp import Client

    async with Client(pdfbasic_mcp) as client:
        result = await client.call_tool(
            "extract_pdf_text", {"file_url": f"{file_server.base}/latest/meta-data"}, raise_on_error=False
        )

    assert result.is_error and "refused the file link" in result.content[0].text
    assert "internal secret" not in result.content[0].text
    assert file_server.requests == []


def test_artifact_and_file_stem(common):
    art = common.artifact("a.txt", b"\x00\xff", "text/plain")

    assert art == {"name": "a.txt", "b64": "AP8=", "mime": "text/plain"}
    assert base64.b64decode(art["b64"]) == b"\x00\xff"
    assert common.file_stem("C:\\Users\\me\\Q3 report.final.pdf") == "Q3 report.final"
    assert common.file_stem("../../etc/passwd") == "passwd"
    assert common.file_stem("") == common.file_stem("...") == "document"


_FIRST_SESSION = """
import asyncio, sys
sys.path.insert(0, ".")
import main
before = set(sys.modules)
from fastmcp import Client

async def first_session():
    async with Client(main.mcp) as client:
        await client.list_tools()

asyncio.run(first_session())
print(sorted(m for m in set(sys.modules) - before if m.startswith("key_value")))
"""


@pytest.mark.slow  # a process of its own
@pytest.mark.parametrize("server", ["pdfbasic", "dataviz"])
def test_a_bundled_server_loads_at_start_what_its_first_session_needs(server):
    # The host starts its stdio servers while it is still loading itself: what fastmcp would
    # import on the first request (its session state store) is loaded before the host connects.
    cwd = Path(__file__).resolve().parents[3] / "backend" / "mcp" / server
    out = subprocess.run([sys.executable, "-c", _FIRST_SESSION], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


@pytest.mark.slow  # a process of its own
def test_pdfbasic_starts_without_its_pdf_library():
    # pypdf (~0.1 s of CPU) loads with the first PDF, not while the host waits for the server.
    cwd = Path(__file__).resolve().parents[3] / "backend" / "mcp" / "pdfbasic"
    code = "import sys; sys.path.insert(0, '.'); import main; print('pypdf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
