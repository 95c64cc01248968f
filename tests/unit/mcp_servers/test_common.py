"""The helpers the bundled servers share: fetching a file_url, V2 artifacts."""

from __future__ import annotations

import base64
import socket

import pytest
from fastmcp.exceptions import ToolError


async def test_fetch_reads_the_body_and_the_download_name(common, file_server):
    url = file_server.add("/files/1", b"hello", "text/plain", "Ünïcode name.csv")

    fetched = await common.fetch_file(url)

    assert (fetched.data, fetched.name) == (b"hello", "Ünïcode name.csv")
    assert fetched.content_type == "text/plain"


@pytest.mark.parametrize("content_length", [True, False], ids=["declared", "streamed"])
async def test_fetch_refuses_files_over_the_limit(common, file_server, content_length):
    url = file_server.add("/big", b"x" * 5000, "text/plain", content_length=content_length)

    with pytest.raises(ToolError, match=r"^the file is larger than the limit of 4,096 bytes$"):
        await common.fetch_file(url, max_bytes=4096)


async def test_fetch_reports_server_failures(common, file_server):
    with pytest.raises(ToolError, match=r"^the file server failed \(HTTP 500\); try again later$"):
        await common.fetch_file(f"{file_server.base}/broken/x")


async def test_fetch_reports_unreachable_hosts(common):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    with pytest.raises(ToolError, match=r"could not download the file \(ConnectError\)"):
        await common.fetch_file(f"http://127.0.0.1:{port}/file.pdf")


async def test_fetch_local_file_only_when_allowed(common, tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n")

    with pytest.raises(ToolError, match="local file paths are not accepted"):
        await common.fetch_file(path.as_uri())
    assert (await common.fetch_file(path.as_uri(), allow_local=True)).data == b"a,b\n"
    with pytest.raises(ToolError, match="no such file"):
        await common.fetch_file(str(tmp_path / "missing.csv"), allow_local=True)


def test_artifact_and_file_stem(common):
    art = common.artifact("a.txt", b"\x00\xff", "text/plain")

    assert art == {"name": "a.txt", "b64": "AP8=", "mime": "text/plain"}
    assert base64.b64decode(art["b64"]) == b"\x00\xff"
    assert common.file_stem("C:\\Users\\me\\Q3 report.final.pdf") == "Q3 report.final"
    assert common.file_stem("../../etc/passwd") == "passwd"
    assert common.file_stem("") == common.file_stem("...") == "document"
