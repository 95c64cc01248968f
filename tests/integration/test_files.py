"""Files in and artifacts out, over a real HTTP server: uploads, signed URLs
fetched by real MCP server processes, ownership, and every kind of result
content becoming an artifact."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import double_model, free_port, make_settings, serve_app, toolbox_entry, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply
from tests.support.pdf import build_pdf

SECRET = "files-proxy-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("files")
    write_config(
        tmp / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never"),
            "pdfbasic": {
                "command": "python",
                "args": ["main.py"],
                "cwd": "backend/mcp/pdfbasic",
                "approval": "never",
                "file_types": ["application/pdf"],
            },
        },
        models=[double_model(llm)],
        default_model="double",
    )
    port = free_port()
    settings = make_settings(
        tmp,
        port=port,
        auth_mode="proxy",
        proxy_secret=SECRET,
        max_upload_bytes=200_000,
        max_upload_bytes_per_user=300_000,
    )
    services = build_services(settings, environ={"DOUBLE_KEY": "k"})
    with serve_app(create_app(settings, services=services), port) as base:
        deadline = time.monotonic() + 60
        while httpx.get(f"{base}/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        yield base, services


def upload(base, headers, name, data, mime="application/octet-stream"):
    return httpx.post(f"{base}/api/files", headers=headers, files={"file": (name, data, mime)})


async def turn(base, headers, message):
    url = base.replace("http", "ws") + "/ws"
    async with websockets.connect(url, additional_headers=headers) as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "chat", **message}))
        events = []
        while not events or events[-1]["type"] not in ("message_done", "error"):
            events.append(json.loads(await asyncio.wait_for(ws.recv(), 60)))
        return events


def test_upload_is_stored_with_owner_type_and_size_and_names_are_not_paths(site):
    base, _ = site
    pdf = build_pdf(["hello"])
    response = upload(base, ALICE, "../../etc/passwd.pdf", pdf, "application/pdf")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "passwd.pdf" and body["mime"] == "application/pdf" and body["size"] == len(pdf)
    assert set(body["suggested_tools"]) == {"pdfbasic_analyze_pdf", "pdfbasic_extract_pdf_text"}
    assert upload(base, ALICE, "a.txt", b"plain", "text/plain").json()["suggested_tools"] == []
    assert upload(base, {"x-user-email": "alice@example.com"}, "a.txt", b"x").status_code == 401


def test_oversized_uploads_are_refused_naming_the_limit(site):
    base, _ = site
    response = upload(base, ALICE, "big.bin", b"x" * 200_001)
    assert response.status_code == 400
    assert "upload limit" in response.json()["error"]["message"]


def test_signed_urls_work_and_fail_when_tampered_or_expired(site):
    base, services = site
    file_id = upload(base, ALICE, "notes.txt", b"secret notes", "text/plain").json()["id"]
    url = services.signer.url(file_id, "alice@example.com")
    assert httpx.get(url).content == b"secret notes"
    assert httpx.get(url.replace("&s=", "&s=0")).status_code == 403
    assert httpx.get(url.replace("u=alice", "u=bob")).status_code == 403
    expired = services.signer.url(file_id, "alice@example.com", now=time.time() - 2 * services.signer.ttl_s)
    assert httpx.get(expired).status_code == 403
    # Bob's own valid signature does not reach Alice's file.
    assert httpx.get(services.signer.url(file_id, "bob@example.com")).status_code == 404


def test_another_user_cannot_fetch_an_upload_or_artifact(site, llm):
    base, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("done"))
    events = asyncio.run(turn(base, ALICE, {"content": "report"}))
    url = next(e for e in events if e["type"] == "tool_result")["artifacts"][0]["url"]
    assert httpx.get(base + url, headers=ALICE).status_code == 200
    assert httpx.get(base + url, headers=BOB).status_code == 404


def test_attach_a_pdf_and_ask_for_its_summary(site, llm):
    base, _ = site
    pdf = build_pdf(["Quarterly report", "Revenue grew by nine percent"], {"Title": "Q3 Report"})
    file_id = upload(base, ALICE, "q3.pdf", pdf, "application/pdf").json()["id"]
    llm.enqueue(
        ToolCallReply([ToolCall("pdfbasic_analyze_pdf", '{"file_url": "q3.pdf"}')]), TextReply("A short report.")
    )
    events = asyncio.run(turn(base, ALICE, {"content": "summarise the attached PDF", "files": [file_id]}))
    start = next(e for e in events if e["type"] == "tool_start")
    assert start["arguments"]["file_url"].startswith(base + f"/api/files/{file_id}/content?")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"], result["content"]
    assert "Q3 Report" in result["content"]
    first = llm.requests[-2]["messages"]
    user = [m for m in first if m["role"] == "user"][-1]["content"]
    assert "q3.pdf (application/pdf" in user and "JVBER" not in user


@pytest.mark.parametrize("chosen", ["tampered", "http://169.254.169.254/latest/meta-data", "file:///etc/passwd"])
def test_a_url_the_model_chose_never_reaches_the_tool(site, llm, chosen):
    base, services = site
    file_id = upload(base, ALICE, "x.txt", b"abc", "text/plain").json()["id"]
    if chosen == "tampered":
        chosen = services.signer.url(file_id, "alice@example.com").replace("&s=", "&s=f")
    # No file attached: the host owns file parameters, so the model's value is dropped and the
    # call (whose file parameter is required) is refused before the tool runs.
    llm.enqueue(ToolCallReply([ToolCall("toolbox_fetch", json.dumps({"file_url": chosen}))]), TextReply("failed"))
    events = asyncio.run(turn(base, ALICE, {"content": "fetch it"}))
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False and "none is attached" in result["content"]
    assert not any(e["type"] == "tool_start" for e in events)


def test_attaching_someone_elses_file_is_refused(site):
    base, _ = site
    file_id = upload(base, ALICE, "mine.txt", b"alice only", "text/plain").json()["id"]
    events = asyncio.run(turn(base, BOB, {"content": "read it", "files": [file_id]}))
    assert events[-1]["type"] == "error" and events[-1]["code"] == "not_found"


def test_image_embedded_blob_and_resource_link_become_three_artifacts(site, llm):
    base, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_three_kinds", "{}")]), TextReply("three"))
    events = asyncio.run(turn(base, ALICE, {"content": "three kinds"}))
    result = next(e for e in events if e["type"] == "tool_result")
    names = {a["name"]: a for a in result["artifacts"]}
    assert set(names) == {"image-1.png", "data.bin", "alpha.txt"}
    assert httpx.get(base + names["alpha.txt"]["url"], headers=ALICE).text == "note alpha"
    assert httpx.get(base + names["image-1.png"]["url"], headers=ALICE).content.startswith(b"\x89PNG")


def test_a_users_upload_quota_is_enforced_per_user(site):
    base, _ = site
    assert upload(base, BOB, "a.bin", b"b" * 150_000).status_code == 200
    assert upload(base, BOB, "b.bin", b"b" * 140_000).status_code == 200
    refused = upload(base, BOB, "c.bin", b"b" * 20_000)
    assert refused.status_code == 400 and "storage limit" in refused.json()["error"]["message"]
    assert upload(base, ALICE, "c.bin", b"a" * 20_000).status_code == 200
