"""Retries of failed model calls, against the HTTP LLM double, over both of the
client's paths (conftest.py): which failures are sent again, how long the client
waits, and that shown text is never repeated."""

import asyncio
import email.utils
import logging
import socket
import time

import httpx
import pytest
from litellm import exceptions as lx

from switchboard.config.models import ModelConfig
from switchboard.errors import Cancelled, LLMContextOverflow, LLMError, LLMRateLimited, LLMStreamCut, LLMUnavailable
from switchboard.llm import LLMClient, TextDelta
from switchboard.llm.retry import RetryPolicy
from tests.support.llm_double import CutReply, ErrorReply, TextReply

SECRET = "sk-test-double-0123456789"
HELLO = [{"role": "user", "content": "Hello"}]
OVERFLOW = ErrorReply(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 131000 tokens.",
    code="context_length_exceeded",
)


@pytest.fixture
def llm(running_double, proves_path):
    running_double.reset()
    proves_path(running_double)
    return running_double


@pytest.fixture
def calls():
    return []


@pytest.fixture
def make_client(path):
    def make(calls, **retry):
        retry = {"base_delay_s": 0.001, "max_delay_s": 5.0, **retry}
        return LLMClient(
            on_call=lambda *report: calls.append(report),
            environ={"DOUBLE_KEY": SECRET},
            direct=path == "direct",
            **retry,
        )

    return make


@pytest.fixture
def client(calls, make_client):
    return make_client(calls)


@pytest.fixture
def model(llm):
    return ModelConfig(name="double", model="openai/double-model", api_base=llm.base_url, api_key_env="DOUBLE_KEY")


async def answer(stream):
    return "".join([event.text async for event in stream if isinstance(event, TextDelta)])


def retries(caplog):
    return [r for r in caplog.records if getattr(r, "event", None) == "llm_retry"]


async def test_rate_limit_waits_for_retry_after_then_answers(client, model, llm, calls, caplog):
    await answer(client.stream(model, HELLO, None))  # litellm's first call is slow: keep it out of the timing
    llm.reset()
    calls.clear()
    llm.enqueue(ErrorReply(429, "Rate limit reached", retry_after="1"), TextReply("Answer after waiting"))
    started = time.monotonic()

    with caplog.at_level(logging.INFO, logger="switchboard.llm"):
        text = await answer(client.stream(model, HELLO, None))

    assert text == "Answer after waiting"
    assert time.monotonic() - started >= 1.0
    assert len(llm.requests) == 2
    ((name, _, usage, error),) = calls  # one report per logical call
    assert name == "double" and error is None and usage is not None
    (record,) = retries(caplog)
    assert (record.model, record.attempt) == ("double", 2) and record.delay_s >= 1.0
    assert SECRET not in record.getMessage() + str(record.__dict__)


async def test_server_errors_are_retried_until_one_succeeds(client, model, llm):
    llm.enqueue(ErrorReply(503), ErrorReply(502), TextReply("third time lucky"))

    assert await answer(client.stream(model, HELLO, None)) == "third time lucky"
    assert len(llm.requests) == 3


async def test_a_server_error_that_persists_fails_after_max_attempts(model, llm, calls, make_client):
    llm.default = ErrorReply(500, "The server had a bad day")
    client = make_client(calls, max_attempts=2)

    with pytest.raises(LLMError) as caught:
        await answer(client.stream(model, HELLO, None))

    assert len(llm.requests) == 2
    assert "server error" in caught.value.message and "tried 2 times" in caught.value.message
    assert caught.value.action
    ((_, _, _, error),) = calls
    assert error is caught.value


async def test_rate_limit_that_persists_is_llm_rate_limited(client, model, llm):
    llm.default = ErrorReply(429, "slow down", retry_after="0")

    with pytest.raises(LLMRateLimited) as caught:
        await answer(client.stream(model, HELLO, None))

    assert len(llm.requests) == 3
    assert caught.value.code == "rate_limited" and "tried 3 times" in caught.value.message


async def test_request_timeout_408_is_retried(client, model, llm):
    llm.enqueue(ErrorReply(408, "request timeout"), TextReply("ok"))

    assert await answer(client.stream(model, HELLO, None)) == "ok"
    assert len(llm.requests) == 2


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (ErrorReply(400, "bad request"), LLMError),
        (ErrorReply(401, "bad key", code="invalid_api_key"), LLMUnavailable),
        (ErrorReply(404, "no such model"), LLMUnavailable),
        (ErrorReply(422, "unprocessable"), LLMError),
        (OVERFLOW, LLMContextOverflow),
    ],
)
async def test_client_errors_are_not_retried(client, model, llm, reply, error):
    llm.enqueue(reply, TextReply("must not be reached"))

    with pytest.raises(error):
        await answer(client.stream(model, HELLO, None))

    assert len(llm.requests) == 1


async def test_context_overflow_is_its_own_error(client, model, llm):
    llm.enqueue(OVERFLOW)

    with pytest.raises(LLMContextOverflow) as caught:
        await answer(client.stream(model, HELLO, None))

    assert caught.value.code == "llm_error"
    assert "too long" in caught.value.message and "new conversation" in caught.value.action


async def test_a_connection_dropped_before_any_text_is_retried(client, model, llm):
    llm.enqueue(CutReply("never shown", chunks=4, cut_after=0), TextReply("complete answer"))

    assert await answer(client.stream(model, HELLO, None)) == "complete answer"
    assert len(llm.requests) == 2


async def test_a_stream_cut_after_text_keeps_the_text_and_is_not_retried(client, model, llm):
    llm.enqueue(CutReply("abcdefgh", chunks=4, cut_after=2), TextReply("a repeated answer"))
    received = []

    with pytest.raises(LLMStreamCut) as caught:
        async for event in client.stream(model, HELLO, None):
            received.append(event.text)

    assert "".join(received) == "abcd"  # one delta or two: the direct path joins the text of one read
    assert len(llm.requests) == 1
    assert "cut off mid-stream" in caught.value.message and "ask again" in caught.value.action.lower()


async def test_an_unreachable_provider_is_tried_max_attempts_times(client, caplog):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = ModelConfig(name="gone", model="openai/x", api_base=f"http://127.0.0.1:{port}/v1", api_key_env="DOUBLE_KEY")

    with caplog.at_level(logging.INFO, logger="switchboard.llm"), pytest.raises(LLMUnavailable, match="tried 3 times"):
        await answer(client.stream(model, HELLO, None))

    assert [r.attempt for r in retries(caplog)] == [2, 3]


async def test_stopping_during_the_wait_is_a_cancelled_call_without_another_request(model, llm, calls, make_client):
    llm.enqueue(ErrorReply(503, "busy", retry_after="3"))
    client = make_client(calls)
    task = asyncio.create_task(answer(client.stream(model, HELLO, None)))
    while not llm.requests:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.2)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert len(llm.requests) == 1
    ((_, duration_s, _, error),) = calls
    assert isinstance(error, Cancelled) and duration_s < 2


# -- the policy on its own, with litellm's real exception types ---------------------


def rate_limited(headers: dict[str, str]) -> lx.RateLimitError:
    response = httpx.Response(429, headers=headers, request=httpx.Request("POST", "https://provider.example/v1"))
    return lx.RateLimitError("slow down", llm_provider="openai", model="x", response=response)


def server_error() -> lx.InternalServerError:
    return lx.InternalServerError("boom", llm_provider="openai", model="x")


def test_backoff_is_exponential_with_full_jitter_and_capped():
    policy = RetryPolicy(max_attempts=6, base_delay_s=1.0, max_delay_s=3.0)

    for attempt, ceiling in [(2, 1.0), (3, 2.0), (4, 3.0), (5, 3.0)]:
        delays = [policy.delay_before(attempt, server_error()) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8 and min(delays) < ceiling * 0.2  # spread over the whole range

    assert policy.delay_before(7, server_error()) is None  # attempts used up


def test_retry_after_in_seconds_date_or_milliseconds_is_honoured():
    policy = RetryPolicy(base_delay_s=0.0, max_delay_s=30.0)
    in_ten_s = email.utils.formatdate(time.time() + 10, usegmt=True)

    assert policy.delay_before(2, rate_limited({"Retry-After": "4"})) == 4.0
    assert 8.5 <= policy.delay_before(2, rate_limited({"retry-after": in_ten_s})) <= 10.0
    assert policy.delay_before(2, rate_limited({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert policy.delay_before(2, rate_limited({"retry-after-ms": "250"})) == 0.25
    assert policy.delay_before(2, rate_limited({"retry-after": "soon"})) == 0.0  # unreadable: plain backoff


def test_retry_after_longer_than_the_longest_wait_is_not_waited_for():
    assert RetryPolicy(max_delay_s=30.0).delay_before(2, rate_limited({"retry-after": "120"})) is None


def test_policy_refuses_nonsense():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay_s=-1)
