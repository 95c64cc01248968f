"""Fitting a conversation into the model's context window: a view over the
history that leaves out the oldest tool results, never an edit of it."""

import pytest

from switchboard.chat import ConversationState, TurnState
from switchboard.chat.context import fitting_context, more_to_trim
from switchboard.config.models import ModelConfig
from switchboard.errors import LLMContextOverflow
from switchboard.history import TRIMMED_TOOL_RESULT, AssistantText, CallRecord, ToolReply, UserText, trimmed
from switchboard.identity.users import User
from switchboard.llm.messages import to_openai
from switchboard.llm.types import Notice, TextDelta
from tests.support.scripted_llm import ScriptedLLM

MODEL = ModelConfig(name="m", model="openai/m")


def history(tool_results: int) -> list:
    records: list = [UserText("u", "question")]
    for i in range(tool_results):
        records.append(AssistantText(f"a{i}", "", calls=(CallRecord(f"c{i}", "t", "{}"),)))
        records.append(ToolReply(f"r{i}", f"c{i}", "t", "s", True, f"result {i}"))
    return records


def tool_contents(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def session_with(tool_results: int) -> TurnState:
    user = User(email="a@example.com", groups=frozenset({"users"}))
    return TurnState(user=user, conversation=ConversationState(owner=user.email, history=history(tool_results)))


def test_the_view_leaves_out_the_oldest_results_and_keeps_the_records():
    records = history(4)
    view = trimmed(records, 2)
    assert tool_contents(to_openai("", view)) == [TRIMMED_TOOL_RESULT] * 2 + ["result 2", "result 3"]
    assert tool_contents(to_openai("", records)) == [f"result {i}" for i in range(4)]


def test_each_trim_takes_the_older_half_of_what_is_still_in_view():
    session = session_with(4)
    steps = []
    while more := more_to_trim(session):
        steps.append(more)
        session.progress.trimmed += more
    assert steps == [2, 1, 1]
    assert more_to_trim(session_with(0)) == 0


async def run(llm, session):
    return [e async for e in fitting_context(llm, MODEL, "system", session, None)]


async def test_an_overflow_trims_the_view_and_calls_once_more():
    llm = ScriptedLLM(LLMContextOverflow("too long"), ["fits"])
    session = session_with(2)

    events = await run(llm, session)

    assert events[0] == Notice(
        "context_trimmed",
        "The conversation no longer fit model 'm': the 1 oldest tool results "
        "were left out and the question sent again.",
    )
    assert events[1] == TextDelta("fits")
    assert tool_contents(llm.sent[0]) == ["result 0", "result 1"]
    assert tool_contents(llm.sent[1]) == [TRIMMED_TOOL_RESULT, "result 1"]
    assert llm.sent[1][0] == {"role": "system", "content": "system"}
    assert [r.text for r in session.conversation.history if isinstance(r, ToolReply)] == [
        "result 0",
        "result 1",
    ]  # records intact
    assert session.progress.trimmed == 1  # later calls of the turn start from the trimmed view


async def test_a_second_overflow_is_raised():
    llm = ScriptedLLM(LLMContextOverflow("too long"), LLMContextOverflow("still too long"))

    with pytest.raises(LLMContextOverflow, match="still too long"):
        await run(llm, session_with(3))
    assert len(llm.sent) == 2


async def test_without_tool_results_there_is_nothing_to_trim_and_no_second_call():
    llm = ScriptedLLM(LLMContextOverflow("too long"), ["unreached"])

    with pytest.raises(LLMContextOverflow):
        await run(llm, session_with(0))
    assert len(llm.sent) == 1
