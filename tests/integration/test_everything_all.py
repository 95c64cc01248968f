"""Everything `@modelcontextprotocol/server-everything` (npm) offers, used from a chat over
stdio and over streamable HTTP, on whichever protocol version it negotiates: every tool the
host offers (its elicitation answered by the user, its sampling answered by the conversation's
model), every prompt (`POST /api/prompts`) and every listed resource (attached to a message).

Needs `npx` and the npm registry; skipped without npx, failed under CI=true when the server
does not start (scripts/test fetches it)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess

import pytest

from tests.support.harness import double_model, free_port, make_settings, running_app, wait_for_port, write_config
from tests.support.llm_double import LLMDouble, TextReply, ToolCall, ToolCallReply

pytestmark = [pytest.mark.timeout(300)]

IN_CI = os.environ.get("CI", "").lower() == "true"
PACKAGE = "@modelcontextprotocol/server-everything"
START_TIMEOUT_S = 180

# Arguments for the tools that need some (the rest take none, or defaults); no tool may
# reach the internet, so the file to compress is a data URI.
ARGUMENTS = {
    "echo": {"message": "hello"},
    "get-annotated-message": {"messageType": "success", "includeImage": True},
    "get-structured-content": {"location": "Chicago"},
    "get-sum": {"a": 2, "b": 3},
    "get-resource-links": {"count": 2},
    "gzip-file-as-resource": {
        "name": "hello.txt.gz",
        "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=",
        "outputType": "resource",
    },
    "trigger-long-running-operation": {"duration": 1, "steps": 2},
    "trigger-sampling-request": {"prompt": "say hi", "maxTokens": 20},
    "trigger-url-elicitation": {"url": "https://example.com/verify", "message": "Open the link"},
}
EXPECTED = {"echo": "hello", "get-sum": "5", "trigger-sampling-request": "a sampled greeting"}


@pytest.fixture(scope="module")
def double():
    with LLMDouble() as running:
        yield running


def _fail_or_skip(why: str) -> None:
    if IN_CI:
        pytest.fail(why)
    pytest.skip(why)


@pytest.fixture(scope="module", params=["stdio", "http"])
def site(request, tmp_path_factory, double):
    if shutil.which("npx") is None:
        pytest.skip("npx is not installed")
    tmp = tmp_path_factory.mktemp(f"everything-{request.param}")
    environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(tmp))}
    proc = None
    if request.param == "stdio":
        entry = {
            "command": "npx",
            "args": ["-y", PACKAGE],
            "env": {"PATH": "${PATH}", "HOME": "${HOME}", "npm_config_prefer_offline": "true"},
        }
    else:
        port = free_port()
        # Its own process group: npx starts node as a child, which outlives a signal to npx alone.
        proc = subprocess.Popen(
            ["npx", "-y", PACKAGE, "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_for_port(port, proc, "server-everything streamableHttp", timeout_s=START_TIMEOUT_S)
        except RuntimeError as exc:
            _stop_group(proc)
            _fail_or_skip(str(exc))
        entry = {"url": f"http://127.0.0.1:{port}/mcp"}
    entry.update(approval="never", sampling="allow", timeout_s=30, roots=[str(tmp)])
    write_config(tmp / "defaults", servers={"everything": entry}, models=[double_model(double)], default_model="double")
    try:
        with running_app(make_settings(tmp, server_start_timeout_s=START_TIMEOUT_S), environ) as (client, services):
            status = services.pool.connections["everything"].status
            if status.status != "ready":
                _fail_or_skip(f"server-everything did not start: {status.status} {status.reason} {status.stderr_tail}")
            yield client, services
    finally:
        if proc is not None:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to npx and node together, SIGKILL if they are still there after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def offered(client) -> list[dict]:
    return [t for t in client.get("/api/config").json()["tools"] if t["server"] == "everything"]


def test_the_server_reports_its_protocol_version(site):
    client, _ = site
    server = next(s for s in client.get("/api/config").json()["servers"] if s["name"] == "everything")
    assert server["status"] == "ready"
    assert server["protocol_version"] in ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")


def test_every_tool_works_from_a_chat(site, double):
    client, _ = site
    tools = offered(client)
    names = {t["tool"] for t in tools}
    assert {"echo", "trigger-elicitation-request", "trigger-sampling-request"} <= names, names
    double.reset()
    calls = [ToolCall(t["name"], json.dumps(ARGUMENTS.get(t["tool"], {}))) for t in tools]
    double.enqueue(ToolCallReply(calls), TextReply("a sampled greeting"), TextReply("All done."))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "try every tool"})
        events = []
        while not events or events[-1]["type"] != "message_done":
            events.append(ws.receive_json())
            if events[-1]["type"] == "elicitation_request":  # the form, and the link to open
                fields = events[-1]["schema"].get("properties", {})
                answer = {"name": "Lin Example", "check": True, "email": "lin@example.com"}
                ws.send_json(
                    {
                        "type": "elicitation_response",
                        "request_id": events[-1]["request_id"],
                        "action": "accept",
                        "content": {k: v for k, v in answer.items() if k in fields},
                    }
                )
    results = {e["tool"].removeprefix("everything_"): e for e in events if e["type"] == "tool_result"}
    assert set(results) == names
    failed = {name: r["content"][:200] for name, r in results.items() if not r["ok"]}
    assert not failed, failed
    for name, text in EXPECTED.items():
        assert text in results[name]["content"], (name, results[name]["content"])
    assert "Lin Example" in results["trigger-elicitation-request"]["content"]
    assert events[-1]["finish_reason"] == "stop"


def test_every_prompt_fills_in(site):
    client, _ = site
    prompts = [p for p in client.get("/api/config").json()["prompts"] if p["server"] == "everything"]
    assert prompts
    values = {
        "city": "Chicago",
        "state": "IL",
        "department": "Engineering",
        "name": "Lin",
        "resourceType": "Text",
        "resourceId": "1",
    }
    for prompt in prompts:
        arguments = {a["name"]: values.get(a["name"], "x") for a in prompt["arguments"] if a.get("required")}
        answer = client.post(
            "/api/prompts", json={"server": "everything", "name": prompt["name"], "arguments": arguments}
        )
        assert answer.status_code == 200, (prompt["name"], answer.text)
        assert answer.json()["text"].strip(), prompt["name"]


def test_every_resource_can_be_attached_to_a_message(site, double):
    client, _ = site
    resources = [r for r in client.get("/api/config").json()["resources"] if r["server"] == "everything"]
    assert resources
    double.reset()
    double.enqueue(TextReply("Read them."))
    refs = [{"server": "everything", "uri": r["uri"]} for r in resources[:20]]
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "read these", "resources": refs})
        events = []
        while not events or events[-1]["type"] not in ("message_done", "error"):
            events.append(ws.receive_json())
    assert events[-1]["type"] == "message_done", events[-1]
    sent = json.dumps(double.requests[-1]["messages"])
    for ref in refs:
        assert ref["uri"] in sent
