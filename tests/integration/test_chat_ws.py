"""The whole loop over a real websocket: real stdio MCP server (toolbox),
litellm talking to the HTTP LLM double."""

from __future__ import annotations

import json

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("chat")
    write_config(
        tmp / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never"),
            "secret": toolbox_entry(groups=["research"], approval="never", description="research only"),
        },
        models=[double_model(llm)],
        default_model="double",
        groups={"dev@localhost": ["users"]},
    )
    with running_app(make_settings(tmp)) as (client, _):
        yield client


def chat(ws, content, **extra):
    ws.send_json({"type": "chat", "content": content, **extra})
    return until(ws, "message_done")


def test_a_fast_stream_reaches_the_page_a_batch_per_frame(app, llm):
    # 120 pieces 10 ms apart: the websocket sends what came within a frame (1/60 s) as one `token`,
    # not one message per piece (each cost the page a task and a draw, and it fell seconds behind).
    pieces = [f"word{n} " for n in range(120)]
    llm.chunk_delay_s = 0.01
    llm.enqueue(TextReply("".join(pieces), chunks=120))
    try:
        with app.websocket_connect("/ws") as ws:
            ws.receive_json()
            events = chat(ws, "a long answer")
    finally:
        llm.chunk_delay_s = 0.0
    tokens = [e["text"] for e in events if e["type"] == "token"]
    assert "".join(tokens) == "".join(pieces)
    assert len(tokens) < 80, len(tokens)  # one piece a message: 120


def test_a_turn_with_a_tool_call_streams_events_in_order(app, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "hello from the tool"}')]),
        TextReply("The tool said **hello**.", chunks=3),
    )
    with app.websocket_connect("/ws") as ws:
        session = ws.receive_json()
        assert session["type"] == "session" and session["user"] == "dev@localhost"
        events = chat(ws, "please echo")
    assert events[0]["type"] == "conversation" and events[0]["title"] == "please echo"
    events = events[1:]
    types = [e["type"] for e in events]
    assert types[0] == "tool_start"
    assert types.index("tool_result") < types.index("token")
    assert types[-1] == "message_done"
    start = events[0]
    assert start["tool"] == "toolbox_echo" and start["server"] == "toolbox"
    assert start["arguments"] == {"text": "hello from the tool"}
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is True and result["content"] == "hello from the tool"
    assert "".join(e["text"] for e in events if e["type"] == "token") == "The tool said **hello**."
    assert "<strong>hello</strong>" in events[-1]["html"]
    # The second model call got the tool result, framed as data.
    second = llm.requests[-1]["messages"]
    tool_msg = next(m for m in second if m["role"] == "tool")
    assert "hello from the tool" in tool_msg["content"] and "<tool_result" in tool_msg["content"]
    assert [t["function"]["name"] for t in llm.requests[-2]["tools"]] == [
        name for name in (t["function"]["name"] for t in llm.requests[-2]["tools"]) if name.startswith("toolbox_")
    ]


def test_parallel_tool_calls_all_run(app, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_add", '{"a": 1, "b": 2}'), ToolCall("toolbox_echo", '{"text": "x"}')]),
        TextReply("done"),
    )
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "two at once")
    results = {e["tool"]: e for e in events if e["type"] == "tool_result"}
    assert set(results) == {"toolbox_add", "toolbox_echo"}
    assert results["toolbox_add"]["content"] == "3.0"


def test_a_user_outside_the_servers_groups_neither_sees_nor_runs_its_tools(app, llm):
    config = app.get("/api/config").json()
    names = {t["name"] for t in config["tools"]}
    assert "toolbox_echo" in names
    assert not any(n.startswith("secret_") for n in names)
    assert "secret" not in {s["name"] for s in config["servers"]}

    llm.enqueue(ToolCallReply([ToolCall("secret_echo", '{"text": "leak"}')]), TextReply("ok"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "use the research tool")
    sent_tools = {t["function"]["name"] for t in llm.requests[-2]["tools"]}
    assert not any(n.startswith("secret_") for n in sent_tools)
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False and "Refused" in result["content"]
    assert not any(e["type"] == "tool_start" for e in events)


def test_a_hallucinated_tool_name_is_refused_and_reported_to_the_model(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("nonexistent_tool", "{}")]), TextReply("sorry"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "do something")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False
    tool_msg = next(m for m in llm.requests[-1]["messages"] if m["role"] == "tool")
    assert "Refused" in tool_msg["content"]


def test_tools_selection_limits_what_is_offered_and_run(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_add", '{"a": 1, "b": 1}')]), TextReply("ok"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "only echo", tools=["toolbox_echo"])
    assert [t["function"]["name"] for t in llm.requests[-2]["tools"]] == ["toolbox_echo"]
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False


def test_empty_tools_list_sends_no_tools(app, llm):
    llm.enqueue(TextReply("plain answer"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        chat(ws, "no tools", tools=[])
    assert "tools" not in llm.requests[-1] or not llm.requests[-1]["tools"]


def test_v2_artifacts_are_stored_and_served_only_to_their_owner(app, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("see the report"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "report")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["display"] == {"open_canvas": True, "primary_file": "report.html"}
    artifacts = {a["name"]: a for a in result["artifacts"]}
    assert set(artifacts) == {"dot.png", "report.html"}
    png = app.get(artifacts["dot.png"]["url"])
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    html = app.get(artifacts["report.html"]["url"])
    assert "sandbox" in html.headers["content-security-policy"]
    # The model never sees base64.
    tool_msg = next(m for m in llm.requests[-1]["messages"] if m["role"] == "tool" and "report.html" in m["content"])
    assert "iVBORw0KGgo" not in tool_msg["content"]


def test_malformed_messages_get_an_error_and_the_socket_stays_open(app, llm):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        for bad in [
            "not json",
            "[]",
            json.dumps({"type": "nope"}),
            json.dumps({"type": "chat"}),
            json.dumps({"type": "chat", "content": 5}),
        ]:
            ws.send_text(bad)
            event = ws.receive_json()
            assert event["type"] == "error" and event["code"] == "bad_request"
        ws.send_json({"type": "approval_response", "call_id": "someone-elses", "approved": True})
        assert ws.receive_json()["code"] == "not_found"
        llm.enqueue(TextReply("still here"))
        events = chat(ws, "hello?")
        assert events[-1]["type"] == "message_done"


def test_an_unknown_model_is_a_clear_error(app):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "hi", "model": "gpt-17"})
        event = ws.receive_json()
    assert event["type"] == "error" and event["code"] == "llm_error"
    assert "gpt-17" in event["message"]


def test_history_is_kept_per_connection(app, llm):
    llm.enqueue(TextReply("first answer"), TextReply("second answer"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        chat(ws, "first question")
        chat(ws, "second question")
    contents = [m.get("content") for m in llm.requests[-1]["messages"]]
    assert "first question" in contents and "first answer" in contents and contents[-1] == "second question"


def test_readyz_and_healthz(app):
    assert app.get("/healthz").json() == {"status": "ok"}
    ready = app.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready" and ready.json()["counts"]["failed"] == 0
    assert "servers" not in ready.json(), "server names are for administrators only"
