"""The HTTP LLM double itself: what it puts on the wire."""

import json

import httpx

from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply


def post(llm, **body):
    return httpx.post(f"{llm.base_url}/chat/completions", json={"model": "m", "messages": [], **body}, timeout=5)


def events(response):
    lines = [line for line in response.text.split("\n\n") if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    return [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]


def test_streams_text_as_sse_chunks_with_usage_last(llm):
    llm.enqueue(TextReply("abcdef", chunks=3))

    response = post(llm, stream=True, stream_options={"include_usage": True})

    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = events(response)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "abcdef"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


def test_tool_call_arguments_arrive_in_fragments_with_indexes(llm):
    llm.enqueue(ToolCallReply([ToolCall("a_x", '{"k": "value"}'), ToolCall("b_y", "{}", id=None)], fragments=3))

    chunks = events(post(llm, stream=True))

    fragments = [tc for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls") or []]
    first = [f for f in fragments if f["index"] == 0]
    assert "".join(f["function"]["arguments"] for f in first) == '{"k": "value"}'
    assert len(first) == 3 and first[0]["id"] == "call_0" and "id" not in first[1]
    second = [f for f in fragments if f["index"] == 1]
    assert second[0]["function"]["name"] == "b_y" and "id" not in second[0]


def test_answers_without_streaming_when_asked(llm):
    llm.enqueue(ToolCallReply([ToolCall("a_x", '{"k": 1}')]))

    body = post(llm, stream=False).json()

    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "a_x", "arguments": '{"k": 1}'}
    assert body["choices"][0]["finish_reason"] == "tool_calls"


def test_scripted_errors_carry_status_and_retry_after(llm):
    llm.enqueue(ErrorReply(429, "slow down", retry_after="3"))

    response = post(llm, stream=True)

    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["message"] == "slow down"


def test_records_requests_and_falls_back_to_the_default(llm):
    llm.default = TextReply("default answer")

    body = post(llm, stream=False, tools=[{"type": "function"}]).json()

    assert body["choices"][0]["message"]["content"] == "default answer"
    assert llm.requests == [{"model": "m", "messages": [], "stream": False, "tools": [{"type": "function"}]}]


def test_unknown_route_is_404(llm):
    assert httpx.get(f"{llm.base_url}/models", timeout=5).status_code == 404
