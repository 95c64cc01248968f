"""Trimming tool results when the model's context window overflows."""

import pytest
from switchboard.auth import User
from switchboard.chat.context import TRIMMED_TOOL_RESULT, fitting_context, trim_tool_results
from switchboard.chat.session import ChatSession
from switchboard.config.models import ModelConfig
from switchboard.errors import LLMContextOverflow
from switchboard.llm import Completed, Notice, TextDelta

MODEL = ModelConfig(name="m", model="openai/m")


def history(tool_results: int) -> list[dict]:
    messages = [{"role": "user", "content": "question"}]
    for n in range(tool_results):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{n}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": f"result {n}"})
    return messages


def tool_contents(messages):
    return [m["content"] for m in messages if m["role"] == "tool"]


@pytest.mark.parametrize(("count", "trimmed"), [(1, 1), (2, 1), (3, 2), (4, 2)])
def test_the_older_half_rounded_up_is_trimmed(count, trimmed):
    messages = history(count)

    assert trim_tool_results(messages) == trimmed

    contents = tool_contents(messages)
    assert contents[:trimmed] == [TRIMMED_TOOL_RESULT] * trimmed
    assert contents[trimmed:] == [f"result {n}" for n in range(trimmed, count)]
    assert messages[0] == {"role": "user", "content": "question"}


def test_trimming_again_takes_the_next_oldest_and_ends_at_zero():
    messages = history(4)
    assert [trim_tool_results(messages) for _ in range(4)] == [2, 1, 1, 0]
    assert tool_contents(messages) == [TRIMMED_TOOL_RESULT] * 4
    assert trim_tool_results(history(0)) == 0


class ScriptedLLM:
    """Each call takes the next script: an exception to raise, or texts to stream."""

    def __init__(self, *scripts):
        self.scripts = list(scripts)
        self.sent: list[list[dict]] = []

    async def stream(self, model, messages, tools):
        self.sent.append([dict(m) for m in messages])
        script = self.scripts.pop(0)
        if isinstance(script, Exception):
            raise script
        for text in script:
            yield TextDelta(text)
        yield Completed(finish_reason="stop")


def session_with(tool_results: int) -> ChatSession:
    session = ChatSession(user=User(email="a@example.com", groups=frozenset({"users"})))
    session.history = history(tool_results)
    return session


async def run(llm, session):
    return [e async for e in fitting_context(llm, MODEL, lambda s: list(s.history), session, None)]


async def test_an_overflow_trims_and_calls_once_more():
    llm = ScriptedLLM(LLMContextOverflow("too long"), ["fits"])
    session = session_with(2)

    events = await run(llm, session)

    assert events[0] == Notice("context_trimmed", "The conversation no longer fit model 'm': the 1 oldest tool results "
                                                  "were shortened and the question sent again.")
    assert events[1] == TextDelta("fits")
    assert tool_contents(llm.sent[0]) == ["result 0", "result 1"]
    assert tool_contents(llm.sent[1]) == [TRIMMED_TOOL_RESULT, "result 1"]
    assert tool_contents(session.history) == [TRIMMED_TOOL_RESULT, "result 1"]  # kept for later turns


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
