"""What a stored conversation keeps besides the text, so a reloaded page shows what the live one
did: a failed answer's reason, the token count, how a call was approved, when a tool started."""

from __future__ import annotations

import time

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("details")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(require_approval=["delete_everything"])},
        models=[double_model(llm)],
        default_model="double",
        groups={"*": ["users"]},
    )
    with running_app(make_settings(tmp)) as (client, services):
        yield client


def chat(ws, content, **extra):
    ws.send_json({"type": "chat", "content": content, **extra})
    return until(ws, "message_done")


def test_a_failed_answer_is_stored_with_its_reason_and_exported(site, llm):
    llm.enqueue(
        TextReply("Fine.", usage={"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}),
        ErrorReply(400, "the prompt names a forbidden colour"),
    )
    with site.websocket_connect("/ws") as ws:
        ws.receive_json()
        conversation_id = chat(ws, "first")[-1]["conversation_id"]
        events = chat(ws, "second")
    error = next(e for e in events if e["type"] == "error")
    assert events[-1]["finish_reason"] == "error"

    messages = site.get(f"/api/conversations/{conversation_id}").json()["messages"]
    assert messages[1]["usage"] == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    failed = messages[-1]
    assert failed["role"] == "assistant" and failed["finish_reason"] == "error"
    assert failed["error"] == {"code": error["code"], "message": error["message"], "action": error["action"]}
    assert "error" not in messages[1]

    markdown = site.get(f"/api/conversations/{conversation_id}/export", params={"format": "md"}).text
    assert "forbidden colour" in markdown and markdown.index("second") < markdown.index("forbidden colour")
    assert "**The answer failed**" in markdown


def test_an_approved_call_is_stored_as_approved_and_its_start_is_stamped(site, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]),
        TextReply("Gone."),
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "hi"}')]),
        TextReply("Echoed."),
    )
    with site.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "delete"})
        asked = until(ws, "approval_request")[-1]
        before = time.time() * 1000
        ws.send_json({"type": "approval_response", "call_id": asked["call_id"], "approved": True, "remember": True})
        events = until(ws, "message_done")
        unasked = chat(ws, "echo")
    start = next(e for e in events if e["type"] == "tool_start")
    assert start["approval"] == {"answer": "remember", "edited": False}
    assert before - 1000 <= start["started_at"] <= time.time() * 1000
    assert next(e for e in events if e["type"] == "tool_result")["approval"] == start["approval"]
    assert "approval" not in next(e for e in unasked if e["type"] == "tool_start")

    messages = site.get(f"/api/conversations/{events[-1]['conversation_id']}").json()["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    assert tools[0]["approval"] == {"answer": "remember", "edited": False}
    assert "approval" not in tools[1]
