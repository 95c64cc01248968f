"""Model faults through the whole app: a real websocket, the real stdio toolbox
server, litellm talking to the HTTP LLM double that misbehaves on cue.

The app is built here rather than with `harness.running_app` because it needs
its own LLM client: the production one, with retry waits short enough for tests."""

from __future__ import annotations

import time

import pytest
from starlette.testclient import TestClient

from switchboard.history import TRIMMED_TOOL_RESULT
from switchboard.llm import DeferredLLMClient
from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import double_model, make_settings, toolbox_entry, until, write_config
from tests.support.llm_double import CutReply, ErrorReply, TextReply, ToolCall, ToolCallReply

KEY = "sk-test-double-0123456789"
ENVIRON = {"DOUBLE_KEY": KEY, "PATH": "/usr/bin:/bin"}
OVERFLOW = ErrorReply(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 131000 tokens.",
    code="context_length_exceeded",
)


@pytest.fixture(autouse=True)
def fresh(llm):
    """`llm` is the module's HTTP LLM double (tests/integration/conftest.py)."""
    llm.reset()


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("faults")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(approval="never")},
        models=[double_model(llm), {**double_model(llm), "name": "keyless", "api_key_env": "UNSET_KEY"}],
        default_model="double",
        groups={"dev@localhost": ["users"]},
    )
    settings = make_settings(tmp)
    # The production client with short waits: 3 attempts, backoff from 10 ms, at most 5 s per wait.
    client = DeferredLLMClient(environ=ENVIRON, base_delay_s=0.01, max_delay_s=5.0)
    services = build_services(settings, llm=client, environ=ENVIRON)
    with TestClient(create_app(settings, services=services)) as test_client:
        test_client.portal.call(services.pool.wait_settled, 60)
        yield test_client


def chat(ws, content, **extra):
    """Send one message; the events of its turn, up to and including message_done."""
    ws.send_json({"type": "chat", "content": content, **extra})
    return until(ws, "message_done")


def tokens(events):
    return "".join(e["text"] for e in events if e["type"] == "token")


def errors(events):
    return [e for e in events if e["type"] == "error"]


def tool_contents(request):
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_rate_limited_call_waits_for_retry_after_and_then_answers(app, llm):
    llm.enqueue(
        TextReply("Warm."), ErrorReply(429, "Rate limit reached", retry_after="1"), TextReply("Worth the wait.")
    )
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        started = time.monotonic()
        chat(ws, "warm up")  # litellm's first call loads much of it: not part of the wait measured
        unhindered = time.monotonic() - started
        started = time.monotonic()
        events = chat(ws, "hello")
        waited = time.monotonic() - started

    assert errors(events) == []
    assert tokens(events) == "Worth the wait."
    assert events[-1]["finish_reason"] == "stop"
    assert waited >= 1.0, (waited, unhindered)
    assert len(llm.requests) == 3
    # The user is told why nothing arrives during the wait, before the answer does.
    (notice,) = [e for e in events if e["type"] == "notice"]
    assert events.index(notice) < min(i for i, e in enumerate(events) if e["type"] == "token")
    assert notice["code"] == "llm_retry"
    assert notice["message"] == (
        "The provider of model 'double' is rate-limiting requests; trying again in 1.0 s (attempt 2 of 3)."
    )


def test_a_server_error_that_persists_is_a_clear_error_after_max_attempts(app, llm):
    llm.default = ErrorReply(500, "The server had a bad day")
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "hello")

    (error,) = errors(events)
    assert error["code"] == "llm_error"
    assert "server error" in error["message"] and "tried 3 times" in error["message"]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert len(notices) == 2 and notices[0].endswith("(attempt 2 of 3).") and notices[1].endswith("(attempt 3 of 3).")
    assert notices[0].startswith("The provider of model 'double' answered with an error; trying again in")
    assert error["action"]
    assert events[-1]["type"] == "message_done" and events[-1]["finish_reason"] == "error"
    assert len(llm.requests) == 3


def test_a_stream_cut_mid_answer_keeps_the_partial_answer_on_screen_and_in_history(app, llm):
    llm.enqueue(CutReply("The first half of the answer, and then", chunks=4, cut_after=2), TextReply("Continuing."))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "tell me a story")
        partial = tokens(events)
        follow_up = chat(ws, "go on")

    assert partial and "The first half of the answer, and then".startswith(partial)
    (error,) = errors(events)
    assert error["code"] == "llm_error" and "cut off" in error["message"]
    assert "ask again" in error["action"].lower()
    done = events[-1]
    assert done["type"] == "message_done" and done["finish_reason"] == "error"
    assert partial in done["html"]
    assert len(llm.requests) == 2  # the cut answer was not asked for again
    assert {"role": "assistant", "content": partial} in llm.requests[1]["messages"]
    assert tokens(follow_up) == "Continuing."


def test_a_context_overflow_trims_older_tool_results_and_retries_once(app, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "first long result"}')]),
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "second long result"}')]),
        OVERFLOW,
        TextReply("Summary that fits."),
    )
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "echo twice, then summarise")

    assert errors(events) == []
    assert [(e["code"], e["message"]) for e in events if e["type"] == "notice"] == [
        (
            "context_trimmed",
            "The conversation no longer fit model 'double': the 1 oldest tool results were left out "
            "and the question sent again.",
        )
    ]
    assert tokens(events) == "Summary that fits."
    assert events[-1]["finish_reason"] == "stop"
    assert len(llm.requests) == 4
    overflowed, retried = llm.requests[2], llm.requests[3]
    first, second = tool_contents(overflowed)
    assert "first long result" in first and "second long result" in second
    assert tool_contents(retried) == [TRIMMED_TOOL_RESULT, second]
    assert [m for m in retried["messages"] if m["role"] != "tool"] == [
        m for m in overflowed["messages"] if m["role"] != "tool"
    ]


def test_a_context_overflow_that_persists_is_reported_after_one_retry(app, llm):
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "big"}')]), OVERFLOW, OVERFLOW, TextReply("unreached")
    )
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "echo")

    (error,) = errors(events)
    assert error["code"] == "llm_error" and "too long" in error["message"]
    assert "new conversation" in error["action"]
    assert events[-1]["finish_reason"] == "error"
    assert len(llm.requests) == 3


def test_a_rejected_key_is_reported_at_once_without_retries(app, llm):
    llm.enqueue(ErrorReply(401, f"Incorrect API key provided: {KEY}", code="invalid_api_key"))
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "hello")

    (error,) = errors(events)
    assert error["code"] == "llm_error" and "credentials" in error["message"] and "DOUBLE_KEY" in error["action"]
    assert KEY not in str(events)
    assert len(llm.requests) == 1


def test_a_model_without_its_key_is_refused_before_any_request(app, llm):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "hello", "model": "keyless"})
        event = ws.receive_json()

    assert event["type"] == "error" and event["code"] == "llm_error"
    assert "UNSET_KEY" in event["message"] + event.get("action", "")
    assert llm.requests == []
