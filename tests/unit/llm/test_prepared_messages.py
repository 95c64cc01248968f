"""A conversation's calls convert only its new records (`PreparedMessages`); whatever the history
(grown, edited, regenerated, trimmed for the window, with a dict in it), the messages are exactly
what `to_openai` makes of it, and the direct path's request body is exactly what `json.dumps` makes
of the whole request, though only the new messages are encoded."""

from __future__ import annotations

import json
from dataclasses import replace

from switchboard.config.models import ModelConfig
from switchboard.history import TRIMMED_TOOL_RESULT, AssistantText, CallRecord, ToolReply, UserText, trimmed
from switchboard.llm import LLMClient
from switchboard.llm.messages import PreparedMessages, messages_json, to_openai
from switchboard.llm.openai_direct import Route, request_body
from tests.support.llm_double import TextReply
from tests.unit.llm.conftest import path_taken


def turn(n: int) -> list:
    return [
        UserText(f"u{n}", f"question {n}: naïve, 日本, ✓"),
        AssistantText(f"a{n}", "", calls=(CallRecord(f"c{n}", "toolbox_echo", "{}"),)),
        ToolReply(f"t{n}", f"c{n}", "toolbox_echo", "toolbox", True, f"result {n}"),
        AssistantText(f"b{n}", f"answer {n}", finish_reason="stop"),
    ]


def histories() -> list[list]:
    """A conversation's calls: grown turn by turn, then compacted, edited, regenerated, cancelled,
    with a late reply, read again, cut, with a dict, back to the start, empty."""
    history: list = []
    seen = []
    for n in range(5):
        history = [*history, *turn(n)]
        seen.append(list(history))
    edited = [*seen[2][:4], UserText("u-edit", "question 1, edited")]  # an edit of turn 1's question
    regenerated = seen[3][:-1]  # the last answer asked again
    cancelled = [*seen[1], replace(seen[1][-1], id="b-x", finish_reason="cancelled")]
    late = [*seen[1], replace(seen[1][2], id="t-late", late=True)]
    reloaded = [*seen[2][:4], *(replace(r) for r in seen[2][4:])]  # the same records read from the store again
    cut = [*seen[2][:4], replace(seen[2][4], text="question 1, another")]
    return [
        *seen,
        trimmed(seen[-1], 2),  # a compaction: the oldest results left out of this view
        seen[-1],
        edited,
        regenerated,
        cancelled,
        late,
        reloaded,
        [*reloaded, *turn(7)],
        cut,
        [*seen[0], {"role": "user", "content": "a sampling request's own message"}],
        seen[0],
        [],
    ]


def test_every_call_is_sent_what_to_openai_makes_of_its_history():
    prepared = PreparedMessages()
    calls = histories()
    seen = calls[:5]
    for history in calls:
        assert prepared.convert("system", history) == to_openai("system", history)
        assert prepared.convert("", history) == to_openai("", history)
    trimmed_tools = [m["content"] for m in prepared.convert("s", trimmed(seen[-1], 2)) if m["role"] == "tool"]
    assert trimmed_tools[:2] == [TRIMMED_TOOL_RESULT] * 2 and trimmed_tools[2:] == ["result 2", "result 3", "result 4"]


def test_a_changed_message_of_one_call_is_not_sent_in_the_next():
    prepared = PreparedMessages()
    history = turn(0)
    first = prepared.convert("system", history)
    first.append({"role": "user", "content": "added by a caller"})
    first[1] = {"role": "user", "content": "replaced by a caller"}
    assert prepared.convert("system", [*history, *turn(1)]) == to_openai("system", [*history, *turn(1)])


def test_the_kept_json_of_every_call_is_what_json_dumps_makes_of_its_messages():
    prepared = PreparedMessages()
    for history in histories():
        for system in ("system", ""):
            messages = prepared.convert(system, history)
            assert messages_json(messages) == json.dumps(to_openai(system, history), ensure_ascii=False)


def test_a_list_a_caller_changed_is_encoded_as_it_is_now():
    prepared = PreparedMessages()
    messages = prepared.convert("system", turn(0))
    messages[1] = {"role": "user", "content": "replaced by a caller"}
    assert json.loads(messages_json(messages))[1]["content"] == "replaced by a caller"
    messages.append({"role": "user", "content": "added"})
    assert json.loads(messages_json(messages)) == messages


def test_the_request_body_is_byte_for_byte_json_dumps_of_the_whole_request_after_an_edit_and_a_regenerate():
    route = Route(
        "openai",
        "http://127.0.0.1:9/v1",
        None,
        {"model": "m", "temperature": 0.2, "stream_options": {"include_usage": True}, "seed": 7},
        "max_completion_tokens",
    )
    tools = [{"type": "function", "function": {"name": "ä_tool", "parameters": {"type": "object"}}}]
    prepared = PreparedMessages()
    grown = [*turn(0), *turn(1), *turn(2)]
    for history in (grown, [*grown[:5], UserText("u-edit", "edited ✓")], grown[:-1], [*grown[:-1], *turn(3)]):
        messages = prepared.convert("system", history)
        for tools_json, limit in ((json.dumps(tools, ensure_ascii=False), 99), (None, None)):
            whole = {**route.body, "stream": True}
            if limit:
                whole["max_completion_tokens"] = limit
            whole["messages"] = to_openai("system", history)
            if tools_json:
                whole["tools"] = tools
            assert request_body(route, messages, tools_json, limit) == json.dumps(whole, ensure_ascii=False).encode()


async def test_the_provider_is_sent_each_call_s_own_history_after_an_edit_and_a_regenerate(llm):
    client = LLMClient(environ={"DOUBLE_KEY": "k"})
    model = ModelConfig(name="double", model="openai/double", api_base=llm.base_url, api_key_env="DOUBLE_KEY")
    grown = [*turn(0), *turn(1)]
    calls = [grown, [*grown, *turn(2)], [*grown[:5], UserText("u-edit", "edited")], grown[:-1], [*grown, *turn(2)]]
    try:
        for history in calls:
            llm.enqueue(TextReply("ok"))
            async for _ in client.stream(model, history, None, system="be brief"):
                pass
    finally:
        await client.aclose()
    assert [path_taken(h) for h in llm.request_headers] == ["direct"] * len(calls)
    assert [r["messages"] for r in llm.requests] == [to_openai("be brief", h) for h in calls]
