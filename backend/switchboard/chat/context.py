"""Keeping a conversation inside the model's context window.

When a model call overflows the window before any of its answer arrived, the
older half of the tool results not yet left out (at least one) is left out of
the model's view, replaced by a short note, and the call is made once more.
Tool results are usually the bulk of a long conversation, and the model can
run a tool again if it needs one.  This is a view: the stored history keeps
every result; the turn remembers how many to leave out for the rest of
it."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from ..config.models import ModelConfig
from ..errors import LLMContextOverflow
from ..history import ToolReply, trimmed
from ..llm.types import LLMEvent, LLMStream, Notice
from .turn_state import TurnState

__all__ = ["fitting_context", "more_to_trim"]

log = logging.getLogger("switchboard.chat")


def more_to_trim(turn: TurnState) -> int:
    """How many more tool results to leave out: the older half (rounded up) of
    those still in view; 0 when none is left."""
    in_view = sum(isinstance(r, ToolReply) for r in turn.conversation.history) - turn.progress.trimmed
    return (in_view + 1) // 2 if in_view > 0 else 0


async def fitting_context(
    llm: LLMStream, model: ModelConfig, system: str, turn: TurnState, tools: list[dict[str, Any]] | None
) -> AsyncGenerator[LLMEvent, None]:
    """The events of one model call over the conversation's history; if it overflows the
    context window before yielding anything, leave out more tool results and make
    the call once more."""
    produced = False
    try:
        async with aclosing(
            llm.stream(model, trimmed(turn.conversation.history, turn.progress.trimmed), tools, system=system)
        ) as events:
            async for event in events:
                produced = produced or not isinstance(event, Notice)
                yield event
        return
    except LLMContextOverflow:
        more = 0 if produced else more_to_trim(turn)
        if not more:
            raise
    turn.progress.trimmed += more
    log.warning(
        "context window exceeded; left out %d more tool results and retrying",
        more,
        extra={"event": "context_trimmed", "model": model.name, "trimmed": turn.progress.trimmed},
    )
    yield Notice(
        "context_trimmed",
        f"The conversation no longer fit model '{model.name}': the {more} oldest tool "
        "results were left out and the question sent again.",
    )
    async with aclosing(
        llm.stream(model, trimmed(turn.conversation.history, turn.progress.trimmed), tools, system=system)
    ) as events:
        async for event in events:
            yield event
