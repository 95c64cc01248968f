"""One turn engine, two doors: the same scripted turns through the websocket and
through `POST /api/chat` (server-sent events) give the same events in the same
order, payloads equal apart from ids and times.  Real sockets (the app served
by uvicorn), a real stdio MCP server, the HTTP LLM double."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.support.doors import HttpDoor, WebsocketDoor, events_of, served
from tests.support.harness import make_settings, write_toolbox_site
from tests.support.llm_double import ErrorReply, Reply, TextReply, ToolCall, ToolCallReply

GRACE_S = 1.5
IDS = {"call_id", "message_id", "conversation_id", "user_message_id", "request_id", "duration_ms", "started_at"}


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("doors")
    write_toolbox_site(tmp, llm)
    with served(make_settings(tmp, llm_max_attempts=1, turn_grace_s=GRACE_S)) as (base, services):
        yield base, services


@dataclass
class Script:
    name: str
    content: str
    replies: list[Reply]
    extra: dict[str, Any] = field(default_factory=dict)
    cancel_at_start: bool = False  # press Stop once the first tool starts
    refused: bool = False  # refused before it starts


SCRIPTS = [
    Script("text", "say hello", [TextReply("Hello there, **friend**.")]),
    Script(
        "one tool",
        "echo it",
        [ToolCallReply([ToolCall("toolbox_echo", '{"text": "ping"}')]), TextReply("It said ping.")],
    ),
    Script(
        "parallel tools",
        "two at once",
        [
            ToolCallReply(
                [ToolCall("toolbox_echo", '{"text": "fast"}'), ToolCall("toolbox_slow", '{"steps": 2, "delay_s": 0.3}')]
            ),
            TextReply("Both done."),
        ],
    ),
    Script("approval", "delete it", [ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("Gone.")]),
    Script("elicitation", "who am I", [ToolCallReply([ToolCall("toolbox_ask_name", "{}")]), TextReply("Hi Ada.")]),
    Script(
        "cancel",
        "count slowly",
        [ToolCallReply([ToolCall("toolbox_slow", '{"steps": 50, "delay_s": 0.2}')]), TextReply("never sent")],
        cancel_at_start=True,
    ),
    Script("model error", "fail please", [ErrorReply(400, "the model refused the request")]),
    Script("refused", "a bad level", [], extra={"compliance_level": "Bogus"}, refused=True),
]


def run(door: Any, script: Script, llm: Any, conversation_id: str) -> list[dict[str, Any]]:
    llm.reset()
    llm.enqueue(*script.replies)
    body = {"content": script.content, "conversation_id": conversation_id, **script.extra}
    events = []
    for event in door.chat(body, script.refused):
        events.append(event)
        if event["type"] == "approval_request":
            door.approve(event["call_id"])
        elif event["type"] == "elicitation_request":
            door.elicit(event["request_id"], {"name": "Ada", "age": 36})
        elif event["type"] == "tool_start" and script.cancel_at_start:
            door.cancel(conversation_id)
    return events


def comparable(events: list[dict[str, Any]], script: Script) -> list[dict[str, Any]]:
    """Events without ids and times; `render` (sent on a timer while text streams) and, for a
    cancelled turn, `tool_progress` (how many steps ran before Stop) depend on timing, and so does
    how many pieces of text one `token` holds (the websocket joins those that come within a frame)."""
    timed = {"render"} | ({"tool_progress"} if script.cancel_at_start else set())
    out = []
    for event in events:
        if event["type"] in timed:
            continue
        event = {k: v for k, v in event.items() if k not in IDS}
        if "artifacts" in event:
            event["artifacts"] = [{k: v for k, v in a.items() if k not in ("id", "url")} for a in event["artifacts"]]
        if event["type"] == "token" and out and out[-1]["type"] == "token":
            out[-1] = {**out[-1], "text": out[-1]["text"] + event["text"]}
            continue
        out.append(event)
    return out


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_the_websocket_and_the_http_stream_give_the_same_events(site, llm, script):
    base, _ = site
    runs = []
    for n, door in enumerate((WebsocketDoor(base), HttpDoor(base))):
        try:
            runs.append(run(door, script, llm, f"consistency-{script.name.replace(' ', '-')}-{n}"))
        finally:
            door.close()
    by_ws, by_http = runs
    assert by_ws and by_ws[-1]["type"] in ("message_done", "error")
    assert comparable(by_http, script) == comparable(by_ws, script)


def test_each_script_shows_what_it_is_about(site, llm):
    """The scripts above do exercise what they are named for (so equal sequences mean something)."""
    base, _ = site
    door = HttpDoor(base)
    try:
        seen = {s.name: run(door, s, llm, f"shows-{s.name.replace(' ', '-')}") for s in SCRIPTS}
    finally:
        door.close()

    def types(name: str) -> list[str]:
        return [e["type"] for e in seen[name]]

    assert types("text")[0] == "conversation" and "token" in types("text") and types("text")[-1] == "message_done"
    assert types("one tool").count("tool_result") == 1
    assert types("parallel tools").count("tool_start") == 2 and "tool_progress" in types("parallel tools")
    approval = seen["approval"]
    assert "approval_request" in types("approval") and next(e for e in approval if e["type"] == "tool_result")["ok"]
    assert "hello Ada, age 36" in next(e for e in seen["elicitation"] if e["type"] == "tool_result")["content"]
    assert seen["cancel"][-1]["finish_reason"] == "cancelled"
    assert "error" in types("model error") and seen["model error"][-1]["finish_reason"] == "error"
    assert seen["refused"] == [
        {
            "type": "error",
            "code": "bad_request",
            "message": "unknown compliance level 'Bogus'",
            "action": "Use one of: Public, Internal, External.",
        }
    ]


def test_a_dropped_stream_leaves_its_turn_running_only_for_the_grace_period(site, llm):
    """Dropped while the turn waits for an approval: nothing is being written, so only
    watching for the disconnect notices it."""
    base, services = site
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("never"))
    with httpx.Client(base_url=base, timeout=30) as client:
        with client.stream(
            "POST", "/api/chat", json={"content": "delete", "conversation_id": "dropped-stream-1"}
        ) as response:
            next(e for e in events_of(response.iter_lines()) if e["type"] == "approval_request")
        dropped = time.monotonic()
        time.sleep(GRACE_S / 3)
        assert services.turns.running("dev@localhost", "dropped-stream-1") is not None  # a reconnect could still attach
        while (
            services.turns.running("dev@localhost", "dropped-stream-1") is not None and time.monotonic() - dropped < 10
        ):
            time.sleep(0.05)
        waited = time.monotonic() - dropped
    assert services.turns.running("dev@localhost", "dropped-stream-1") is None
    assert GRACE_S - 0.2 < waited < GRACE_S + 2


def test_a_websocket_turn_is_answered_and_stopped_over_http(site, llm):
    base, services = site
    llm.reset()
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]),
        ToolCallReply([ToolCall("toolbox_slow", '{"steps": 50, "delay_s": 0.2}')]),
        TextReply("never"),
    )
    door, http = WebsocketDoor(base), HttpDoor(base)
    try:
        events = []
        for event in door.chat({"content": "delete, then count", "conversation_id": "cross-door-1"}, False):
            events.append(event)
            if event["type"] == "approval_request":
                http.approve(event["call_id"])  # asked on the websocket, answered over HTTP
            elif event["type"] == "tool_start" and event["tool"] == "toolbox_slow":
                http.cancel("cross-door-1")  # started on the websocket, stopped over HTTP
    finally:
        door.close()
        http.close()
    results = [e for e in events if e["type"] == "tool_result"]
    assert results[0]["tool"] == "toolbox_delete_everything" and results[0]["ok"]
    assert (
        events[-1]["finish_reason"] == "cancelled" and services.turns.running("dev@localhost", "cross-door-1") is None
    )
