"""A restart while a call waits for approval: the page still attached and the stored
conversation say that the server restarted (not "Cancelled by the user"), and a call made
through the tool gateway names the tool it runs, in the events and in the stored messages."""

from __future__ import annotations

import json

from tests.support.harness import (
    double_model,
    make_settings,
    running_app,
    toolbox_entry,
    until,
    write_config,
    write_toolbox_site,
)
from tests.support.llm_double import ToolCall, ToolCallReply

RESTARTED = "The server restarted while this call waited for approval, so it did not run."


def test_a_restart_during_a_pending_gateway_approval_says_so_and_names_the_real_tool(tmp_path, llm):
    llm.reset()
    write_config(
        tmp_path / "defaults",
        servers={"toolbox": toolbox_entry()},
        models=[{**double_model(llm), "tool_exposure": "gateway"}],
        default_model="double",
    )
    llm.enqueue(
        ToolCallReply(
            [ToolCall("switchboard_call_tool", json.dumps({"name": "toolbox_delete_everything", "arguments": {}}))]
        )
    )
    with running_app(make_settings(tmp_path)) as (client, services):
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "clean up"})
            asked = until(ws, "approval_request")
            conversation_id = next(e for e in asked if e["type"] == "conversation")["conversation_id"]
            assert asked[-1]["tool"] == "toolbox_delete_everything"
            client.portal.call(services.turns.stop)  # what the app's shutdown does
            after = until(ws, "message_done")
        stored = client.get(f"/api/conversations/{conversation_id}").json()["messages"]
    error = next(e for e in after if e["type"] == "error")
    assert "restarted" in error["message"]
    result = next(e for e in after if e["type"] == "tool_result")
    assert (result["tool"], result["server"], result["ok"], result["content"]) == (
        "toolbox_delete_everything",
        "toolbox",
        False,
        RESTARTED,
    )
    assert after[-1]["finish_reason"] == "error"
    [tool] = [m for m in stored if m["role"] == "tool"]
    assert tool["content"] == RESTARTED and tool["tool"] == "toolbox_delete_everything" and tool["server"] == "toolbox"
    assert "Cancelled by the user" not in json.dumps(stored)


def test_a_stop_by_the_user_still_says_cancelled_by_the_user(tmp_path, llm):
    llm.reset()
    write_toolbox_site(tmp_path, llm)
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]))
    with running_app(make_settings(tmp_path)) as (client, _):
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "clean up"})
            asked = until(ws, "approval_request")
            conversation_id = next(e for e in asked if e["type"] == "conversation")["conversation_id"]
            ws.send_json({"type": "cancel"})
            assert until(ws, "message_done")[-1]["finish_reason"] == "cancelled"
        stored = client.get(f"/api/conversations/{conversation_id}").json()["messages"]
    [tool] = [m for m in stored if m["role"] == "tool"]
    assert tool["content"] == "Cancelled by the user." and tool["tool"] == "toolbox_delete_everything"


def test_a_restart_during_an_open_question_says_the_call_waited_for_an_answer(tmp_path, llm):
    """A multi round-trip question (`input_required`) lives only in the turn that asked it."""
    llm.reset()
    write_config(
        tmp_path / "defaults",
        servers={"toolbox": toolbox_entry(approval="never")},
        models=[double_model(llm)],
        default_model="double",
    )
    llm.enqueue(ToolCallReply([ToolCall("toolbox_ask_name", "{}")]))
    with running_app(make_settings(tmp_path, shutdown_grace_s=0)) as (client, services):
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "who am I?"})
            asked = until(ws, "elicitation_request")
            conversation_id = next(e for e in asked if e["type"] == "conversation")["conversation_id"]
            client.portal.call(services.turns.stop)
            after = until(ws, "message_done")
        stored = client.get(f"/api/conversations/{conversation_id}").json()["messages"]
    result = next(e for e in after if e["type"] == "tool_result")
    assert not result["ok"] and result["content"].startswith(
        "The server restarted while this call waited for your answer"
    )
    [tool] = [m for m in stored if m["role"] == "tool"]
    assert tool["content"] == result["content"]
