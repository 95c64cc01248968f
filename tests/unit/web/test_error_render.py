"""One renderer for every door's error answer (web/error_render.py): the same error of the tree
in the page's API shape, OpenAI's and JSON-RPC's, with the status the tree gives it."""

from __future__ import annotations

import json

import pytest

from switchboard.chat.events import ErrorEvent
from switchboard.errors import LLMRateLimited, NotARequest, StoreUnavailable, ToolNotAllowed, ToolTimeout
from switchboard.web.error_render import render, style_for


def test_the_api_style_is_code_message_action_with_the_trees_status():
    wire = render(ToolTimeout("the tool took too long", action="Try again."), "api")
    assert wire.status == 504
    assert wire.body == {"error": {"code": "timeout", "message": "the tool took too long", "action": "Try again."}}
    assert json.loads(wire.json()) == wire.body
    assert render(StoreUnavailable("no database"), "api", request_id="abc").body["error"]["request_id"] == "abc"


def test_the_openai_style_folds_the_action_into_the_message_and_types_the_status():
    wire = render(LLMRateLimited("slow down", action="Wait a minute."), "openai")
    assert wire.status == 429
    assert wire.body == {
        "error": {
            "message": "slow down. Wait a minute.",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limited",
        }
    }
    # an event that ended a turn has only its code: the status of the most general class with it
    event = render(ErrorEvent(code="tool_error", message="the server failed"), "openai")
    assert event.status == 502 and event.body["error"]["type"] == "api_error"


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (NotARequest("not JSON"), 400, -32600),
        (ToolNotAllowed("not yours"), 403, -32000),
        (ToolTimeout("too slow"), 502, -32603),  # a failure of the server: 502, whatever its own status
        (StoreUnavailable("no database"), 502, -32603),
    ],
)
def test_the_rpc_style_keeps_a_refusals_status_and_answers_a_failure_with_502(error, status, code):
    wire = render(error, "rpc")
    assert (wire.status, wire.body["error"]["code"]) == (status, code)
    assert wire.body["error"]["message"] == error.message
    assert ("data" in wire.body["error"]) == bool(error.action)


def test_the_style_of_a_request_is_its_paths():
    assert style_for("/v1/chat/completions") == "openai"
    assert style_for("/api/apps/call_1/rpc") == "rpc"
    assert style_for("/api/apps/call_1") == "api"
    assert style_for("/api/config") == "api" and style_for("/") == "api"
