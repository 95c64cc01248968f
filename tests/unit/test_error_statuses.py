"""One error map: every class of the tree in errors.py carries its HTTP status, every door
answers with it, and an event's code maps to the status of its most general class."""

from __future__ import annotations

import pytest

from switchboard import errors
from switchboard.errors import SwitchboardError, http_status, status_for_code

EXPECTED = {
    "SwitchboardError": 500,
    "ConfigError": 500,
    "BadRequest": 400,
    "NotARequest": 400,
    "TooLarge": 413,
    "MethodNotAllowed": 405,
    "Unauthorized": 401,
    "Forbidden": 403,
    "NotFound": 404,
    "Conflict": 409,
    "TooMany": 429,
    "RateLimited": 429,
    "Cancelled": 500,
    "ToolError": 502,
    "SkillRejected": 502,
    "ToolNotAllowed": 403,
    "ToolQuarantined": 403,
    "ToolTimeout": 504,
    "ServerUnavailable": 503,
    "NeedsAuth": 502,
    "SignInFailed": 502,
    "TaskGone": 502,
    "StoreError": 500,
    "StoreUnavailable": 503,
    "LLMError": 502,
    "LLMRateLimited": 429,
    "LLMTimeout": 504,
    "LLMUnavailable": 502,
    "LLMStreamCut": 502,
    "LLMContextOverflow": 400,
}


def tree() -> list[type[SwitchboardError]]:
    found, pending = [], [SwitchboardError]
    while pending:
        cls = pending.pop(0)
        found.append(cls)
        pending += cls.__subclasses__()
    return [cls for cls in found if cls.__module__ == errors.__name__]


def test_every_error_type_in_the_tree_has_its_status():
    assert {cls.__name__ for cls in tree()} == set(EXPECTED), "a new error type needs its status here"


@pytest.mark.parametrize("cls", tree(), ids=lambda cls: cls.__name__)
def test_the_status_of_each_error_is_the_one_in_the_map(cls):
    exc = cls("message")
    assert http_status(exc) == EXPECTED[cls.__name__]
    # a forbidden tool is 403 on every door (it was 502 on one, 403 on another)
    general = next(c for c in tree() if c.code == cls.code)
    assert status_for_code(cls.code) == general.status


# JSON-RPC codes an MCP App's request is refused with; every other error is a failure (-32603, HTTP 502)
RPC = {
    "BadRequest": -32602,
    "TooLarge": -32602,
    "NotARequest": -32600,
    "MethodNotAllowed": -32600,
    "Unauthorized": -32000,
    "Forbidden": -32000,
    "ToolNotAllowed": -32000,
    "ToolQuarantined": -32000,
    "RateLimited": -32000,
    "NotFound": -32601,
}


@pytest.mark.parametrize("cls", tree(), ids=lambda cls: cls.__name__)
def test_the_json_rpc_code_of_each_error_is_a_class_attribute_of_the_tree(cls):
    assert cls("message").rpc_code == RPC.get(cls.__name__, errors.RPC_INTERNAL)


def test_codes_no_error_has_are_internal_errors():
    assert status_for_code("no-such-code") == 500
    assert status_for_code("forbidden") == 403 and status_for_code("tool_error") == 502
