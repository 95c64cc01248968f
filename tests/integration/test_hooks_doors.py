"""The operator's hooks on every door: a `deny` reason reaches the user and the model on the
websocket, /api/chat and /v1, and an MCP App's own call is refused the same way; no secret of the
deployment is ever in an event; a broken hooks.json, found on reload, denies until fixed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.harness import (
    PROJECT_ROOT,
    double_model,
    make_settings,
    running_app,
    toolbox_entry,
    until,
    write_config,
)
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-hooks-123"
MODEL_KEY = "model-key-secret-xyz"
SERVER_ENV = "server-env-secret-xyz"
SERVER_HEADER = "header-secret-xyz"
HOOK = str(PROJECT_ROOT / "tests" / "support" / "hooks" / "policy.py")
APPS = PROJECT_ROOT / "tests" / "support" / "servers" / "apps.py"
REASON = "blocked by the site policy"
# Each turn starts about eight hook processes (a Python each): slow on a busy machine.
pytestmark = pytest.mark.timeout(180)
POINTS = ("session_start", "prompt_submit", "pre_model", "pre_tool", "permission_request", "post_tool", "turn_end")


def headers(email: str) -> dict[str, str]:
    return {"X-User-Email": email, "X-Proxy-Secret": SECRET}


ALICE, ADMIN = headers("alice@example.com"), headers("root@example.com")


def hooks_file(record: Path) -> dict:
    command = ["python", HOOK]
    deny = {"type": "command", "command": [*command, "deny", REASON], "timeout_s": 20}
    return {
        "hooks": [
            *(
                {"event": p, "handler": {"type": "command", "command": [*command, "record", str(record)]}}
                for p in POINTS
            ),
            {"event": "pre_tool", "match": {"tools": ["toolbox_echo", "counter_bump"]}, "handler": deny},
        ]
    }


def build(tmp: Path, llm) -> tuple:
    write_config(
        tmp / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never", env={"TOOLBOX_TOKEN": SERVER_ENV}),
            "counter": {"command": "python", "args": [str(APPS)]},
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": f"Bearer {SERVER_HEADER}"}},
        },
        models=[double_model(llm)],
        default_model="double",
        groups={"alice@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    record = tmp / "events.jsonl"
    (tmp / "overrides").mkdir(exist_ok=True)
    (tmp / "overrides" / "hooks.json").write_text(json.dumps(hooks_file(record)))
    return make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET), record


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    settings, record = build(tmp_path_factory.mktemp("hooks"), llm)
    with running_app(settings, environ={"DOUBLE_KEY": MODEL_KEY}) as (client, services):
        yield client, services, record


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def told_to_model(llm) -> str:
    return next(m for m in llm.requests[-1]["messages"] if m["role"] == "tool")["content"]


def test_a_deny_reaches_user_and_model_on_the_websocket(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", '{"text": "ping"}')]), TextReply("It was blocked."))
    with client.websocket_connect("/ws", headers=ALICE) as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "echo ping"})
        events = until(ws, "message_done")
    result = next(e for e in events if e["type"] == "tool_result")
    assert not result["ok"] and REASON in result["content"]
    assert not any(e["type"] == "tool_start" for e in events)
    assert REASON in told_to_model(llm) and "ping" not in told_to_model(llm).replace('"ping"', "")


def test_a_deny_reaches_user_and_model_on_api_chat_and_v1(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", '{"text": "ping"}')]), TextReply("It was blocked."))
    sse = client.post("/api/chat", json={"content": "echo ping"}, headers=ALICE).text
    result = next(
        json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: ") and '"tool_result"' in line
    )
    assert not result["ok"] and REASON in result["content"] and REASON in told_to_model(llm)

    llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", '{"text": "ping"}')]), TextReply("It was blocked."))
    v1 = client.post(
        "/v1/chat/completions",
        headers=ALICE,
        json={"model": "double", "messages": [{"role": "user", "content": "echo"}]},
    )
    assert v1.status_code == 200 and v1.json()["choices"][0]["message"]["content"] == "It was blocked."
    assert REASON in told_to_model(llm)


def test_an_apps_own_call_is_denied_with_the_reason(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("counter_show_counter", '{"start": 1}')]), TextReply("Shown."))
    with client.websocket_connect("/ws", headers=ALICE) as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "show the counter"})
        app = next(e for e in until(ws, "message_done") if e["type"] == "app")
        answer = client.post(
            f"/api/apps/{app['call_id']}/rpc",
            json={"method": "tools/call", "params": {"name": "bump", "arguments": {"count": 1}}},
            headers=ALICE,
        )
        assert answer.status_code == 403 and REASON in answer.json()["error"]["message"]
        shown = until(ws, "tool_result")[-1]
        assert shown["from_app"] == app["call_id"] and REASON in shown["content"] and not shown["ok"]


def test_every_point_runs_and_no_secret_is_ever_in_an_event(site, llm):
    client, _, record = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_add", '{"a": 2, "b": 3}')]), TextReply("Five."))
    with client.websocket_connect("/ws", headers=ALICE) as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "add 2 and 3"})
        until(ws, "message_done")
    deadline = time.monotonic() + 30
    while '"turn_end"' not in record.read_text() and time.monotonic() < deadline:  # turn_end is not waited for
        time.sleep(0.1)
    text = record.read_text()
    seen = {json.loads(line)["event"] for line in text.splitlines()}
    assert {"session_start", "prompt_submit", "pre_model", "pre_tool", "post_tool", "turn_end"} <= seen
    for secret in (MODEL_KEY, SECRET, SERVER_ENV, SERVER_HEADER):
        assert secret not in text
    event = next(json.loads(line) for line in text.splitlines() if '"post_tool"' in line and "toolbox_add" in line)
    assert event["user"] == {"email": "alice@example.com", "groups": ["users"]} and event["result"].startswith("5")


def test_a_broken_hooks_json_found_on_reload_denies_until_it_is_fixed(tmp_path, llm):
    settings, record = build(tmp_path, llm)
    hooks = tmp_path / "overrides" / "hooks.json"
    with running_app(settings, environ={"DOUBLE_KEY": MODEL_KEY}) as (client, _):
        hooks.write_text('{"hooks": [\n {"event": "pre_tool", "handler": {"type": "command"}}\n]}')
        refused = client.post("/api/admin/reload", headers=ADMIN)
        assert refused.status_code == 400 and "hooks.json" in refused.text and "line 2" in refused.text
        assert "hooks[0].handler.command" in refused.text
        llm.enqueue(TextReply("never"))
        with client.websocket_connect("/ws", headers=ALICE) as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "hello"})
            error = until(ws, "error", "message_done")[-1]
        assert error["type"] == "error" and "the policy check is unavailable" in error["message"]
        assert "hooks.json" in client.get("/readyz").json()["reason"]  # said, as for any file a reload refused

        hooks.write_text(json.dumps(hooks_file(record)))
        assert client.post("/api/admin/reload", headers=ADMIN).status_code == 200
        llm.enqueue(TextReply("Hello again."))
        with client.websocket_connect("/ws", headers=ALICE) as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "hello"})
            assert until(ws, "message_done")[-1]["finish_reason"] == "stop"
