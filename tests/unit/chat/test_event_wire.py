"""Events are frozen values with one wire form: made once per event, read back (another
process's events, through the relay) into the same typed event without being made again."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from switchboard.chat.events import (
    AppEvent,
    ApprovalRequest,
    ArtifactRef,
    AttachedEvent,
    CatalogueChanged,
    ConversationEvent,
    ElicitationRequest,
    ErrorEvent,
    IncognitoStateEvent,
    MessageDone,
    NoticeEvent,
    RenderEvent,
    ServerEvent,
    SessionEvent,
    TaskEvent,
    TokenEvent,
    ToolLog,
    ToolProgress,
    ToolResultEvent,
    ToolStart,
    event_from_json,
)

ARTIFACT = ArtifactRef(id="a1", name="r.pdf", mime="application/pdf", size=3, url="/api/artifacts/a1")
EXAMPLES: list[ServerEvent] = [
    SessionEvent(user="dev@localhost", groups=["users"], conversation_id="c1"),
    TokenEvent(text="Hé\n"),
    ToolStart(call_id="call_1", tool="toolbox_echo", server="toolbox", arguments={"text": "hi"}, started_at=1.5e12),
    ToolProgress(call_id="call_1", progress=1, total=3, message="one"),
    ToolLog(call_id="call_1", level="info", message="working"),
    ApprovalRequest(call_id="call_1", tool="toolbox_echo", server="toolbox", arguments={}, reason="destructive"),
    ElicitationRequest(
        request_id="q1", message="Your name?", schema_={"type": "object", "properties": {"name": {"type": "string"}}}
    ),
    ToolResultEvent(
        call_id="call_1",
        tool="toolbox_echo",
        server="toolbox",
        ok=True,
        content="hi",
        results={"n": [1, 2]},
        artifacts=[ARTIFACT],
        display={"open_canvas": True},
        duration_ms=12,
        approval={"answer": "approve"},
    ),
    AppEvent(call_id="call_1", server="dataviz", tool="dataviz_chart", resource_uri="ui://chart"),
    RenderEvent(message_id="m1", settled="<h1>hi</h1>\n", open="<p>there</p>\n"),
    MessageDone(
        message_id="m1", finish_reason="stop", usage={"prompt_tokens": 3}, html="<p>hi</p>", conversation_id="c1"
    ),
    NoticeEvent(code="retrying", message="the model is busy"),
    ErrorEvent(code="tool_error", message="it broke", action="Try again."),
    ConversationEvent(conversation_id="c1", title="Hi"),
    IncognitoStateEvent(conversation_id="c1", state="gAAAAAB-sealed"),
    AttachedEvent(conversation_id="c1", running=True, server_time=1.7e12),
    CatalogueChanged(server="toolbox"),
    TaskEvent(
        task_id="t1",
        call_id="call_1",
        server="slow",
        tool="slow_report",
        status="completed",
        ok=True,
        content="done",
        artifacts=[ARTIFACT],
    ),
]


def test_every_kind_of_event_has_an_example():
    assert {type(event) for event in EXAMPLES} == set(get_args(ServerEvent))


@pytest.mark.parametrize("event", EXAMPLES, ids=lambda e: e.type)
def test_an_event_reads_back_from_its_wire_form_without_being_serialized_again(event):
    text = event.to_json()
    assert text.startswith(f'{{"type":"{event.type}"') and "null" not in text
    assert event.to_json() is text  # made once
    back = event_from_json(text)
    assert type(back) is type(event) and back == event
    assert back.to_json() is text  # the text it came as is the text it goes on as


def test_the_question_schema_keeps_its_wire_name():
    text = EXAMPLES[6].to_json()
    assert '"schema":{' in text and "schema_" not in text


def test_an_event_cannot_change_after_it_is_made_and_a_copy_has_its_own_text():
    start = ToolStart(call_id="call_1", tool="t", server="s", arguments={})
    before = start.to_json()
    with pytest.raises(ValidationError):
        start.from_app = "call_0"  # type: ignore[misc]
    copy = start.model_copy(update={"from_app": "call_0"})
    assert copy.to_json() != before and '"from_app":"call_0"' in copy.to_json() and start.to_json() is before


def test_a_kind_this_version_does_not_know_is_refused():
    with pytest.raises(ValidationError):
        event_from_json('{"type":"weather","sky":"blue"}')


def test_the_terminal_client_handles_every_kind_of_event():
    """The CLI matches on the kind and ends with `assert_never`: a kind added to `ServerEvent`
    without a case there fails here (and in the type checker)."""
    import io

    import httpx

    from switchboard.cli.chat import _Terminal

    answers: list[str] = []

    def server(request: httpx.Request) -> httpx.Response:
        answers.append(f"{request.url.path} {request.content.decode()}")
        return httpx.Response(204)

    with httpx.Client(transport=httpx.MockTransport(server), base_url="http://switchboard") as client:
        out, err = io.StringIO(), io.StringIO()
        terminal = _Terminal(client, io.StringIO(""), out, err)  # no answers on stdin: deny, decline
        finishes = [terminal.show(event) for event in EXAMPLES]
    assert finishes.count("stop") == 1 and out.getvalue() == "Hé\n"
    assert answers == ['/api/calls/call_1/approval {"approved":false}', '/api/elicitations/q1 {"action":"decline"}']
