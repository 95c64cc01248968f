"""Approvals, cancellation, identity in proxy mode and the origin check,
over real websockets with a real stdio server and the HTTP LLM double."""

from __future__ import annotations

import pytest
from starlette.websockets import WebSocketDisconnect

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"


def build(tmp, llm, **settings):
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(), "research": toolbox_entry(groups=["research"], approval="never")},
        models=[double_model(llm)],
        default_model="double",
        groups={"alice@example.com": ["users", "research"], "*@example.com": ["users"], "dev@localhost": ["users"]},
    )
    return make_settings(tmp, **settings)


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    with running_app(build(tmp_path_factory.mktemp("ctl"), llm)) as (client, _):
        yield client


@pytest.fixture(scope="module")
def proxy_app(tmp_path_factory, llm):
    with running_app(build(tmp_path_factory.mktemp("proxy"), llm, auth_mode="proxy", proxy_secret=SECRET)) as (
        client,
        _,
    ):
        yield client


def test_a_destructive_tool_waits_for_approval_and_runs_when_approved(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("done"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "delete it"})
        request = until(ws, "approval_request")[-1]
        assert request["tool"] == "toolbox_delete_everything" and "read-only" in request["reason"]
        ws.send_json({"type": "approval_response", "call_id": request["call_id"], "approved": True})
        events = until(ws, "message_done")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and "deleted" in result["content"]
    assert any(e["type"] == "tool_start" for e in events)


def test_a_denied_call_never_runs_and_the_model_is_told(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("ok, not deleting"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "delete it"})
        request = until(ws, "approval_request")[-1]
        ws.send_json({"type": "approval_response", "call_id": request["call_id"], "approved": False})
        events = until(ws, "message_done")
    assert not any(e["type"] == "tool_start" for e in events)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False and "denied" in result["content"]
    assert "denied" in next(m for m in llm.requests[-1]["messages"] if m["role"] == "tool")["content"]


def test_allow_for_this_conversation_stops_asking(app, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]),
        TextReply("one"),
        ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]),
        TextReply("two"),
    )
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "delete"})
        request = until(ws, "approval_request")[-1]
        ws.send_json({"type": "approval_response", "call_id": request["call_id"], "approved": True, "remember": True})
        until(ws, "message_done")
        ws.send_json({"type": "chat", "content": "again"})
        events = until(ws, "message_done")
    assert not any(e["type"] == "approval_request" for e in events)
    assert next(e for e in events if e["type"] == "tool_result")["ok"]


def test_an_approval_cannot_be_answered_by_another_user(proxy_app, llm):
    app = proxy_app
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("x"))
    with (
        app.websocket_connect("/ws", headers=headers("alice@example.com")) as ws,
        app.websocket_connect("/ws", headers=headers("bob@example.com")) as other,
    ):
        ws.receive_json()
        other.receive_json()
        ws.send_json({"type": "chat", "content": "delete"})
        request = until(ws, "approval_request")[-1]
        other.send_json({"type": "approval_response", "call_id": request["call_id"], "approved": True})
        assert other.receive_json()["code"] == "not_found"
        ws.send_json({"type": "approval_response", "call_id": request["call_id"], "approved": False})
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["ok"] is False


def test_cancel_stops_a_running_tool_and_keeps_the_conversation_usable(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 50, "delay_s": 0.2}')], text="Counting now."))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "count slowly"})
        until(ws, "tool_progress")
        ws.send_json({"type": "cancel"})
        done = until(ws, "message_done")[-1]
        assert done["finish_reason"] == "cancelled" and "Counting now." in done["html"]
        llm.enqueue(TextReply("fresh answer"))
        ws.send_json({"type": "chat", "content": "are you there?"})
        events = until(ws, "message_done")
    assert events[-1]["finish_reason"] == "stop"
    messages = llm.requests[-1]["messages"]
    roles = [m["role"] for m in messages]
    # The cancelled call got an answer in the history, so the provider accepts it.
    tool_msgs = [m for m in messages if m["role"] == "tool"]
    assert tool_msgs and "Cancelled by the user" in tool_msgs[-1]["content"]
    assert roles[-1] == "user"


def test_username_is_always_the_signed_in_user(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_whoami", '{"username": "admin@evil.example"}')]), TextReply("ok"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "who am i"})
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["content"] == "user=dev@localhost"


def test_a_cross_site_websocket_is_refused(app):
    with pytest.raises(WebSocketDisconnect) as info:
        with app.websocket_connect("/ws", headers={"origin": "https://evil.example"}) as ws:
            ws.receive_json()
    assert info.value.code == 1008


def headers(email, secret=SECRET):
    return {"x-user-email": email, "x-proxy-secret": secret}


def test_proxy_identity_needs_the_secret(proxy_app):
    assert proxy_app.get("/api/config", headers={"x-user-email": "alice@example.com"}).status_code == 401
    assert proxy_app.get("/api/config", headers=headers("alice@example.com", "wrong")).status_code == 401
    assert proxy_app.get("/api/config", headers=headers("")).status_code == 401
    config = proxy_app.get("/api/config", headers=headers("alice@example.com")).json()
    assert config["user"]["email"] == "alice@example.com" and "research" in config["user"]["groups"]
    assert proxy_app.get("/healthz").status_code == 200  # liveness needs no identity
    for bad in ({"x-user-email": "alice@example.com"}, headers("alice@example.com", "nope")):
        with pytest.raises(WebSocketDisconnect) as info:
            with proxy_app.websocket_connect("/ws", headers=bad) as ws:
                ws.receive_json()
        assert info.value.code == 1008


def test_groups_decide_which_tools_each_user_sees(proxy_app):
    alice = {t["name"] for t in proxy_app.get("/api/config", headers=headers("alice@example.com")).json()["tools"]}
    bob = {t["name"] for t in proxy_app.get("/api/config", headers=headers("bob@example.com")).json()["tools"]}
    assert "research_echo" in alice and "research_echo" not in bob and "toolbox_echo" in bob


def test_a_crafted_call_to_another_groups_tool_is_refused(proxy_app, llm):
    llm.enqueue(ToolCallReply([ToolCall("research_echo", '{"text": "x"}')]), TextReply("ok"))
    with proxy_app.websocket_connect("/ws", headers=headers("bob@example.com")) as ws:
        assert ws.receive_json()["user"] == "bob@example.com"
        ws.send_json({"type": "chat", "content": "x", "tools": ["research_echo"]})
        events = until(ws, "message_done")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False and not any(e["type"] == "tool_start" for e in events)


def test_artifacts_belong_to_their_owner(proxy_app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("ok"))
    with proxy_app.websocket_connect("/ws", headers=headers("alice@example.com")) as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "report"})
        events = until(ws, "message_done")
    url = next(e for e in events if e["type"] == "tool_result")["artifacts"][0]["url"]
    assert proxy_app.get(url, headers=headers("alice@example.com")).status_code == 200
    assert proxy_app.get(url, headers=headers("bob@example.com")).status_code == 404
    assert proxy_app.get(url).status_code == 401
