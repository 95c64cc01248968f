"""A stored message's `data` keeps its JSON shape (store/message_data.py only names its keys): rows
written before the keys were typed read back as they were stored, through every read (load, the
message list, a page, the app's look-up) and into the model's context; and the recorder writes the
same JSON for each role as it did."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import insert, text

from switchboard.chat.prepared_contexts import PreparedContexts
from switchboard.chat.recording import stored_form
from switchboard.history import AssistantText, CallRecord, ToolReply, UserText
from switchboard.store.models import messages

OWNER = "ann@example.com"
# Shapes as the app stored them before `MessageData` (one row of each role, every key it wrote).
OLD_USER = {
    "files": [{"id": "f1", "name": "notes.txt", "mime": "text/plain", "size": 12}],
    "resources": [{"server": "docs", "uri": "docs://a"}],
    "context": "\n\n[attached notes.txt]",
}
OLD_ASSISTANT = {
    "turn": "a2",
    "tool_calls": [{"id": "call_1", "name": "clock_now", "arguments": '{"tz": "UTC"}'}],
}
OLD_TOOL = {
    "results": {"now": "12:00"},
    "display": {"kind": "table"},
    "duration_ms": 7,
    "approval": {"mode": "auto"},
    "artifacts": [{"id": "art1", "name": "a.html", "mime": "text/html", "size": 9}],
    "arguments": {"tz": "UTC"},
    "turn": "a2",
    "app": {"resource_uri": "ui://clock", "digest": "d1", "calls": [{"call_id": "x", "ok": True}]},
    "mcp_result": {"content": [{"type": "text", "text": "12:00"}], "isError": False},
    "call_id": "call_1",
    "tool": "clock_now",
    "server": "clock",
    "ok": True,
    "model_text": "It is 12:00.",
}
OLD_ANSWER = {
    "turn": "a2",
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    "finish_reason": "error",
    "error": {"code": "internal", "message": "it broke", "action": "Ask again."},
}
ROWS = [("u1", None, "user", "what time is it?", OLD_USER), ("a1", "u1", "assistant", "", OLD_ASSISTANT)]
ROWS += [("t1", "a1", "tool", "12:00", OLD_TOOL), ("a2", "t1", "assistant", "It is noon.", OLD_ANSWER)]


async def _old_rows(store, cid: str) -> None:
    await store.create_conversation(id=cid, owner=OWNER, title="t", model=None, compliance_level=None)
    now = datetime(2026, 1, 1, tzinfo=UTC)

    def work(conn):
        for seq, (mid, parent, role, content, data) in enumerate(ROWS, start=1):
            values = {"id": mid, "conversation_id": cid, "parent_id": parent, "role": role, "content": content}
            conn.execute(insert(messages).values(**values, data=data, seq=seq, created_at=now))
        conn.execute(text("UPDATE conversations SET leaf_id = 'a2' WHERE id = :cid"), {"cid": cid})

    await store.transaction("write rows of before", work)


async def test_old_rows_read_back_as_stored_everywhere(store):
    await _old_rows(store, "c-old")
    expected = {mid: data for mid, _, _, _, data in ROWS}
    loaded = await store.load("c-old")
    assert {m.id: m.data for m in loaded.messages} == expected
    assert {m.id: m.data for m in await store.messages("c-old")} == expected
    paged = await store.messages_by_id("c-old", list(expected))
    assert {m.id: m.data for m in paged} == expected
    _, tool = await store.find_tool_call(OWNER, "call_1")
    assert tool.data == OLD_TOOL
    assert tool.to_api() == {
        "id": "t1",
        "parent_id": "a1",
        "role": "tool",
        "content": "12:00",
        "created_at": tool.created_at.isoformat(),
        **OLD_TOOL,
    }

    history = PreparedContexts().prepare(loaded, 0).history
    user, call, reply, answer = history
    assert isinstance(user, UserText) and user.context == OLD_USER["context"]
    assert isinstance(call, AssistantText) and call.calls == (CallRecord("call_1", "clock_now", '{"tz": "UTC"}'),)
    assert isinstance(reply, ToolReply) and (reply.call_id, reply.tool, reply.server, reply.ok, reply.text) == (
        "call_1",
        "clock_now",
        "clock",
        True,
        "It is 12:00.",
    )
    assert isinstance(answer, AssistantText) and answer.finish_reason == "error"


async def test_an_apps_change_keeps_the_other_keys_as_they_were(store):
    await _old_rows(store, "c-app")

    def add(data):
        app = (data.get("app") or {}).copy()
        app["model_context"] = "noon"
        return {**data, "app": app}

    changed = await store.change_message_data("c-app", "t1", add)
    stored = {m.id: m.data for m in await store.messages("c-app")}["t1"]
    assert stored == changed == {**OLD_TOOL, "app": {**OLD_TOOL["app"], "model_context": "noon"}}


def test_the_recorder_writes_each_roles_json_as_before():
    """What `stored_form` gives the store, as JSON text, for the records a turn keeps."""
    user = stored_form(UserText(id="u1", text="q", context="[ctx]"), {"files": [], "resources": []})
    assert user == ("user", "q", {"files": [], "resources": [], "context": "[ctx]"})
    calls = (CallRecord("call_1", "clock_now", "{}"),)
    assistant = stored_form(AssistantText(id="a1", text="", calls=calls), {"turn": "a2"})
    assert json.dumps(assistant[2]) == json.dumps(
        {"turn": "a2", "tool_calls": [{"id": "call_1", "name": "clock_now", "arguments": "{}"}]}
    )
    answer = stored_form(
        AssistantText(id="a2", text="done", finish_reason="stop"), {"turn": "a2", "usage": None, "error": None}
    )
    assert json.dumps(answer[2]) == json.dumps({"turn": "a2", "finish_reason": "stop"})
    reply = ToolReply(id="t1", call_id="call_1", tool="clock_now", server="clock", ok=False, text="for the model")
    role, content, data = stored_form(reply, {"turn": "a2", "content": "shown", "arguments": None, "duration_ms": 3})
    assert (role, content) == ("tool", "shown")
    assert json.dumps(data) == json.dumps(
        {
            "turn": "a2",
            "duration_ms": 3,
            "call_id": "call_1",
            "tool": "clock_now",
            "server": "clock",
            "ok": False,
            "model_text": "for the model",
        }
    )
