"""Keeping a conversation inside the model's context window.

When a model call overflows the window before any of its answer arrived, the
older half of the tool results in the history (at least one) is replaced by a
short note and the call is made once more. Tool results are usually the bulk
of a long conversation, and the model can run a tool again if it needs one;
what the user and the model said stays untouched.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..config.models import ModelConfig
from ..errors import LLMContextOverflow
from ..llm.types import LLMEvent, Notice
from .session import ChatSession

if TYPE_CHECKING:
    from .loop import LLMStream

__all__ = ["TRIMMED_TOOL_RESULT", "fitting_context", "trim_tool_results"]

TRIMMED_TOOL_RESULT = "[older tool result removed to fit the model's context window]"

log = logging.getLogger("switchboard.chat")


def trim_tool_results(history: list[dict[str, Any]]) -> int:
    """Replace the content of the older half (rounded up) of the tool results not
    trimmed yet; returns how many were replaced (0: nothing left to trim)."""
    untrimmed = [m for m in history if m.get("role") == "tool" and m.get("content") != TRIMMED_TOOL_RESULT]
    count = (len(untrimmed) + 1) // 2
    for message in untrimmed[:count]:
        message["content"] = TRIMMED_TOOL_RESULT
    return count


async def fitting_context(llm: LLMStream, model: ModelConfig, messages: Callable[[ChatSession], list[dict[str, Any]]],
                          session: ChatSession, tools: list[dict[str, Any]] | None) -> AsyncIterator[LLMEvent]:  # fmt: skip
    """The events of one model call over `messages(session)`; if it overflows the
    context window before yielding anything, trim the session's history and make
    the call once more."""
    produced = False
    try:
        async with aclosing(llm.stream(model, messages(session), tools)) as events:
            async for event in events:
                produced = produced or not isinstance(event, Notice)
                yield event
        return
    except LLMContextOverflow:
        trimmed = 0 if produced else trim_tool_results(session.history)
        if not trimmed:
            raise
    log.warning("context window exceeded; trimmed %d tool results and retrying", trimmed,
                extra={"event": "context_trimmed", "model": model.name, "trimmed": trimmed})  # fmt: skip
    yield Notice("context_trimmed", f"The conversation no longer fit model '{model.name}': the {trimmed} oldest tool "
                                    "results were shortened and the question sent again.")
    async with aclosing(llm.stream(model, messages(session), tools)) as events:
        async for event in events:
            yield event
