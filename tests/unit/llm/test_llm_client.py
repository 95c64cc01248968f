"""LLMClient against a real HTTP server speaking the OpenAI streaming API, over both
paths (conftest.py): the direct one (the openai SDK posts the request, our code
reads the chunks) and litellm's (litellm's own OpenAI code builds the requests and
parses the answers). Every behaviour here must be the same on both."""

import json
import socket

import pytest

from switchboard.config.models import ModelConfig
from switchboard.errors import Cancelled, LLMError, LLMRateLimited, LLMStreamCut, LLMTimeout, LLMUnavailable
from switchboard.llm import Completed, LLMClient, TextDelta, Usage
from tests.support.llm_double import CutReply, ErrorReply, TextReply, ToolCall, ToolCallReply

SECRET = "sk-test-double-0123456789"
HELLO = [{"role": "user", "content": "Hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "dataviz_chart_csv",
            "description": "Draw a chart",
            "parameters": {"type": "object", "properties": {"csv_text": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def llm(running_double, proves_path):
    running_double.reset()
    proves_path(running_double)
    return running_double


@pytest.fixture
def calls():
    return []


@pytest.fixture
async def client(calls, path):
    client = LLMClient(
        direct=path == "direct",
        on_call=lambda *report: calls.append(report),
        environ={"DOUBLE_KEY": SECRET},
        demo_chunk_delay_s=0,
        base_delay_s=0.001,  # retries (tests/unit/llm/test_llm_retry.py) without waiting
        max_delay_s=2.0,
    )
    yield client
    await client.aclose()


@pytest.fixture
def model(llm):
    return ModelConfig(name="double", model="openai/double-model", api_base=llm.base_url, api_key_env="DOUBLE_KEY")


async def collect(stream):
    return [event async for event in stream]


def split(events):
    *deltas, completed = events
    assert isinstance(completed, Completed)
    assert all(isinstance(delta, TextDelta) for delta in deltas)
    return [delta.text for delta in deltas], completed


async def test_text_arrives_as_several_deltas_then_one_completed(client, model, llm):
    llm.chunk_delay_s = 0.05  # a model's pace: each chunk arrives on its own (fast ones may come as one delta)
    llm.enqueue(TextReply("The quick brown fox jumps over the lazy dog", chunks=4))

    texts, completed = split(await collect(client.stream(model, HELLO, None)))

    assert len(texts) == 4
    assert "".join(texts) == "The quick brown fox jumps over the lazy dog"
    assert completed.finish_reason == "stop"
    assert completed.tool_calls == []


async def test_request_reaches_the_double_with_messages_tools_and_key(client, model, llm):
    await collect(client.stream(model, HELLO, TOOLS))

    (request,) = llm.requests
    assert request["model"] == "double-model"
    assert request["messages"] == HELLO
    assert request["tools"] == TOOLS
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert llm.request_headers[0]["authorization"] == f"Bearer {SECRET}"


async def test_no_tools_key_when_there_are_no_tools(client, model, llm):
    await collect(client.stream(model, HELLO, []))

    assert "tools" not in llm.requests[0]


async def test_usage_is_reported_in_completed_and_to_on_call(client, model, llm, calls):
    usage = {"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168}
    llm.enqueue(TextReply("Counted", usage=usage))

    _, completed = split(await collect(client.stream(model, HELLO, None)))

    assert completed.usage == Usage(123, 45, 168)
    ((name, duration_s, reported_usage, error),) = calls
    assert (name, reported_usage, error) == ("double", Usage(123, 45, 168), None)
    assert duration_s > 0


async def test_tool_call_fragments_are_assembled(client, model, llm):
    arguments = json.dumps({"csv_text": "a,b\n1,2\n3,4", "title": "Sales"})
    llm.enqueue(ToolCallReply([ToolCall("dataviz_chart_csv", arguments, id="call_abc")], fragments=5))

    texts, completed = split(await collect(client.stream(model, HELLO, TOOLS)))

    assert texts == []
    assert completed.finish_reason == "tool_calls"
    (call,) = completed.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_abc", "dataviz_chart_csv", arguments)


async def test_parallel_tool_calls_are_kept_apart_and_get_ids(client, model, llm):
    first, second = json.dumps({"csv_text": "x\n1"}), json.dumps({"timezone": "Europe/Berlin"})
    llm.enqueue(
        ToolCallReply(
            [ToolCall("dataviz_chart_csv", first, id="call_1"), ToolCall("time_now", second, id=None)],
            fragments=3,
            text="Let me check.",
        )
    )

    texts, completed = split(await collect(client.stream(model, HELLO, TOOLS)))

    assert "".join(texts) == "Let me check."
    assert [(c.name, c.arguments) for c in completed.tool_calls] == [("dataviz_chart_csv", first), ("time_now", second)]
    ids = [c.id for c in completed.tool_calls]
    assert ids[0] == "call_1"
    assert ids[1].startswith("call_") and ids[1] != ids[0]


async def test_complete_returns_the_whole_text(client, model, llm):
    llm.enqueue(TextReply("A sampled answer.", chunks=3))

    assert await client.complete(model, HELLO) == "A sampled answer."


async def test_rate_limit_beyond_the_longest_wait_fails_at_once_saying_how_long(client, model, llm, calls):
    llm.enqueue(ErrorReply(429, "Rate limit reached", retry_after="7"))  # the client waits at most 2 s

    with pytest.raises(LLMRateLimited) as caught:
        await collect(client.stream(model, HELLO, None))

    assert caught.value.code == "rate_limited"
    assert "7 seconds" in caught.value.action
    assert len(llm.requests) == 1  # neither we, litellm nor the OpenAI SDK retried
    assert calls[0][3] is caught.value


async def test_server_error_becomes_llm_error_after_every_attempt(client, model, llm):
    llm.default = ErrorReply(500, "The server had a bad day")

    with pytest.raises(LLMError) as caught:
        await collect(client.stream(model, HELLO, None))

    assert type(caught.value) is LLMError
    assert "server error" in caught.value.message and "tried 3 times" in caught.value.message
    assert len(llm.requests) == 3


async def test_rejected_key_becomes_llm_unavailable_without_leaking_it(client, model, llm):
    llm.enqueue(ErrorReply(401, f"Incorrect API key provided: {SECRET}", code="invalid_api_key"))

    with pytest.raises(LLMUnavailable) as caught:
        await collect(client.stream(model, HELLO, None))

    assert "credentials" in caught.value.message
    assert "DOUBLE_KEY" in caught.value.action
    assert SECRET not in caught.value.message + caught.value.action + repr(caught.value)


async def test_stream_cut_mid_answer_is_an_llm_error_after_the_first_deltas(client, model, llm):
    llm.enqueue(CutReply("abcdefgh", chunks=4, cut_after=2))
    received = []

    with pytest.raises(LLMStreamCut) as caught:
        async for event in client.stream(model, HELLO, None):
            received.append(event)

    assert "".join(e.text for e in received) == "abcd"  # as one delta or two: the text of one read goes together
    assert "cut off" in caught.value.message and caught.value.code == "llm_error"
    assert len(llm.requests) == 1  # never sent again once text was shown


async def test_slow_provider_becomes_llm_timeout(client, model, llm):
    llm.response_delay_s = 2

    with pytest.raises(LLMTimeout):
        await collect(client.stream(model, HELLO, None, timeout_s=0.3))


async def test_stall_mid_stream_becomes_llm_timeout(client, model, llm):
    llm.chunk_delay_s = 2
    llm.enqueue(TextReply("one two three", chunks=3))

    with pytest.raises(LLMTimeout):
        await collect(client.stream(model, HELLO, None, timeout_s=0.3))


async def test_unreachable_provider_becomes_llm_unavailable(client):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = ModelConfig(name="gone", model="openai/x", api_base=f"http://127.0.0.1:{port}/v1", api_key_env="DOUBLE_KEY")

    with pytest.raises(LLMUnavailable) as raised:
        await collect(client.stream(model, HELLO, None))
    assert raised.value.message.startswith(
        f"Model 'gone': nothing answers at http://127.0.0.1:{port}/v1 (connection refused)"
    )


async def test_provider_sdk_without_credentials_is_unavailable(client, llm, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)  # OpenAI itself, no key anywhere (no api_base of the site's)
    model = ModelConfig(name="no-key", model="openai/x")

    with pytest.raises(LLMUnavailable, match="not set up correctly"):
        await collect(client.stream(model, HELLO, None))


async def test_missing_key_is_refused_before_any_request(llm, calls, path):
    client = LLMClient(on_call=lambda *report: calls.append(report), environ={}, direct=path == "direct")
    model = ModelConfig(name="double", model="openai/x", api_base=llm.base_url, api_key_env="DOUBLE_KEY")

    with pytest.raises(LLMUnavailable, match="DOUBLE_KEY is not set") as caught:
        await collect(client.stream(model, HELLO, None))

    assert llm.requests == []
    assert calls[0][3] is caught.value


async def test_model_string_without_provider_is_unavailable(client):
    with pytest.raises(LLMUnavailable, match="cannot tell the provider") as caught:
        await collect(client.stream(ModelConfig(name="odd", model="no-such-model"), HELLO, None))

    assert "provider/model" in caught.value.action


async def test_litellm_provider_look_ups_run_once_per_model_entry(client, model, llm, monkeypatch):
    from switchboard.llm import client as client_module

    looked_up = []
    real = client_module._check_provider
    monkeypatch.setattr(client_module, "_check_provider", lambda m: looked_up.append(m.model) or real(m))
    for _ in range(3):
        await collect(client.stream(model, HELLO, None))
    with pytest.raises(LLMUnavailable):  # a model litellm cannot place is not remembered as fine
        await collect(client.stream(ModelConfig(name="odd", model="no-such-model"), HELLO, None))
    assert looked_up == [model.model, "no-such-model"]
    assert len(llm.requests) == 3 and all(r["stream_options"] == {"include_usage": True} for r in llm.requests)


async def test_stopping_the_stream_reports_a_cancelled_call(client, model, llm, calls):
    llm.enqueue(TextReply("one two three four", chunks=4))
    stream = client.stream(model, HELLO, None)

    assert isinstance(await anext(stream), TextDelta)
    await stream.aclose()

    ((name, _, _, error),) = calls
    assert name == "double" and isinstance(error, Cancelled)


async def test_leaving_after_the_completed_event_is_not_a_cancellation(client, model, llm, calls):
    stream = client.stream(model, HELLO, None)
    async for event in stream:
        if isinstance(event, Completed):
            break
    await stream.aclose()

    assert calls[0][3] is None


async def test_a_keyless_local_model_sends_no_key_and_never_openais(llm, path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operators-openai-key")
    client = LLMClient(environ={}, direct=path == "direct")
    model = ModelConfig(name="local", model="openai/llama3.1", api_base=llm.base_url)

    events = await collect(client.stream(model, HELLO, None))
    await client.aclose()

    assert isinstance(events[-1], Completed)
    sent = llm.request_headers[-1].get("authorization")
    assert sent is None if path == "direct" else sent == "Bearer keyless"
