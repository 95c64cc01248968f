"""Requests a server makes during a tool call: elicitation (a question for
the user), sampling (a completion from the conversation's model), progress."""

from __future__ import annotations

import json

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("requests")
    write_config(
        tmp / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never"),
            "nosample": toolbox_entry(approval="never", sampling=False),
        },
        models=[double_model(llm)],
        default_model="double",
    )
    with running_app(make_settings(tmp, elicitation_timeout_s=2.0)) as (client, _):
        yield client


def test_elicitation_reaches_the_user_and_the_answer_goes_back(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("nice to meet you"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "ask me"})
        request = until(ws, "elicitation_request")[-1]
        assert request["message"] == "Who are you?"
        assert set(request["schema"]["properties"]) == {"name", "age"}
        assert request["call_id"]
        ws.send_json(
            {
                "type": "elicitation_response",
                "request_id": request["request_id"],
                "action": "accept",
                "content": {"name": "Ada", "age": 36},
            }
        )
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["content"] == "hello Ada, age 36"


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_declined_or_cancelled_elicitation_is_reported(app, llm, action):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("ok"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "ask me"})
        request = until(ws, "elicitation_request")[-1]
        ws.send_json({"type": "elicitation_response", "request_id": request["request_id"], "action": action})
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["content"] == f"no answer ({action})"


def test_an_unanswered_elicitation_times_out_as_cancel(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("ok"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "ask me"})
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["content"] == "no answer (cancel)"


def test_sampling_runs_on_the_conversations_model_and_is_shown(app, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_summarize_with_llm", '{"text": "a long story"}')]),
        TextReply("a short story"),  # the server's sampling request
        TextReply("Here is the summary."),
    )
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "summarise"})
        asked = until(ws, "approval_request")[-1]  # sampling: "ask" (the default) asks the user first
        assert asked["kind"] == "sampling" and asked["server"] == "toolbox" and not asked["editable"]
        assert "a long story" in json.dumps(asked["arguments"]) and "sampling" in asked["reason"]
        ws.send_json({"type": "approval_response", "call_id": asked["call_id"], "approved": True})
        events = until(ws, "message_done")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and result["content"] == "summary: a short story"
    assert any(e["type"] == "tool_log" and "model" in e["message"] for e in events)
    sampled = llm.requests[-2]["messages"]
    assert any("a long story" in str(m.get("content")) for m in sampled)


def test_sampling_false_refuses_the_request(app, llm):
    before = len(llm.requests)
    llm.enqueue(ToolCallReply([ToolCall("nosample_summarize_with_llm", '{"text": "x"}')]), TextReply("ok"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "summarise"})
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["ok"] is False
    assert len(llm.requests) == before + 2  # no sampling call reached the model
