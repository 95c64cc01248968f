"""The direct path's failures go straight into the error tree (`llm/direct_errors.py`): what the
user sees for each answer of the HTTP LLM double (the error's class, code, HTTP status and
message, the provider's own words in brackets, the key never), and which are sent again."""

from __future__ import annotations

import pytest

from switchboard.config.models import ModelConfig
from switchboard.errors import LLMError
from switchboard.llm import LLMClient, TextDelta
from tests.support.llm_double import ErrorReply, OddReply, TextReply
from tests.unit.llm.conftest import path_taken

SECRET = "sk-direct-errors-0123456789"
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture
async def client():
    made = LLMClient(environ={"DOUBLE_KEY": SECRET}, base_delay_s=0.001, max_delay_s=2.0)
    yield made
    await made.aclose()


async def failure(client, llm, *replies, **kwargs):
    """The error a call ends with, the text shown before it, and how many requests were sent."""
    llm.enqueue(*replies)
    model = ModelConfig(name="double", model="openai/double", api_base=llm.base_url, api_key_env="DOUBLE_KEY")
    shown = []
    with pytest.raises(LLMError) as caught:
        async for event in client.stream(model, HELLO, None, **kwargs):
            if isinstance(event, TextDelta):
                shown.append(event.text)
    assert {path_taken(h) for h in llm.request_headers} == {"direct"}
    error = caught.value
    assert SECRET not in f"{error.message} {error.action} {error!r}"
    return (type(error).__name__, error.code, error.status, error.message), "".join(shown), len(llm.requests)


SEEN = {
    "401": (
        [ErrorReply(401, f"Incorrect API key provided: {SECRET}", code="invalid_api_key")],
        {},
        (
            "LLMUnavailable",
            "llm_error",
            502,
            "The provider rejected the credentials of model 'double' (HTTP 401: Incorrect API key provided: ***)",
        ),
        1,
    ),
    "429 over the longest wait": (
        [ErrorReply(429, "Rate limit reached for requests", retry_after="7")],
        {},
        (
            "LLMRateLimited",
            "rate_limited",
            429,
            "Model 'double' is rate-limited by its provider (HTTP 429: Rate limit reached for requests)",
        ),
        1,
    ),
    "500 every time": (
        [ErrorReply(500, "The server had a bad day")] * 3,
        {},
        (
            "LLMError",
            "llm_error",
            502,
            "The provider of model 'double' had a server error (HTTP 500: The server had a bad day) (tried 3 times)",
        ),
        3,
    ),
    "a body that is not JSON": (
        [ErrorReply(503), OddReply(body="{not json", content_type="application/json")],
        {},
        (
            "LLMError",
            "llm_error",
            502,
            "Model 'double' answered with what is not a chat completion ({not json) (tried 2 times)",
        ),
        2,
    ),
    "an event that is not JSON": (
        [OddReply(body="data: {garbled\n\n", content_type="text/event-stream")],
        {},
        (
            "LLMError",
            "llm_error",
            502,
            "Model 'double' answered with what is not a chat completion ({garbled)",
        ),
        1,
    ),
    "an error inside the stream": (
        [OddReply(body='data: {"error": {"message": "overloaded, sorry"}}\n\n', content_type="text/event-stream")],
        {},
        ("LLMError", "llm_error", 502, "The provider of model 'double' sent an error (overloaded, sorry)"),
        1,
    ),
    "slow": (
        [],
        {"timeout_s": 0.3},
        ("LLMTimeout", "timeout", 504, "Model 'double' did not answer in time (no answer within the wait)"),
        1,
    ),
}


@pytest.mark.parametrize("scenario", SEEN)
async def test_what_the_user_sees_of_each_failure(client, llm, scenario):
    replies, kwargs, expected, requests = SEEN[scenario]
    if scenario == "slow":
        llm.response_delay_s = 2

    seen, shown, sent = await failure(client, llm, *replies, **kwargs)

    assert (seen, shown, sent) == (expected, "", requests)


async def test_a_garbled_event_after_text_keeps_the_text_and_is_a_cut_answer(client, llm):
    body = 'data: {"choices": [{"index": 0, "delta": {"content": "Half an ans"}}]}\n\ndata: {garbled\n\n'
    seen, shown, sent = await failure(client, llm, OddReply(body=body, content_type="text/event-stream"))

    assert seen[:3] == ("LLMStreamCut", "llm_error", 502) and shown == "Half an ans" and sent == 1
    assert seen[3].startswith("The answer of model 'double' was cut off mid-stream: ")


async def test_a_rate_limit_is_waited_out_for_its_retry_after_and_then_answered(client, llm):
    llm.enqueue(ErrorReply(429, "slow down", retry_after="0"), TextReply("after waiting"))
    model = ModelConfig(name="double", model="openai/double", api_base=llm.base_url, api_key_env="DOUBLE_KEY")

    assert await client.complete(model, HELLO) == "after waiting"
    assert len(llm.requests) == 2
