"""The end of a turn: every open call answered, the answer stored, then `message_done`;
and the events that wait for a commit, handed out once it is stored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from ..errors import SwitchboardError
from ..history import AssistantText, ToolReply
from ..llm.types import Usage
from .calls.unfinished import unfinished_text
from .conversation_state import new_id
from .events import ErrorEvent, MessageDone, ServerEvent, ToolResultEvent
from .tool_round import Recorder
from .turn_state import TurnState, retrieved
from .views.render import INLINE_CHARS, render_markdown, rendered

__all__ = ["announced", "close_turn"]


async def announced(turn: TurnState) -> list[ServerEvent]:
    """What waited for a commit, once it is stored (nothing when nothing waits); raises the store's error."""
    announcement = turn.announcement
    if announcement is None:
        return []
    events = await announcement.due()  # a failed commit stays: the loop's end finds it again
    turn.announcement = None
    return events


async def close_turn(turn: TurnState, finish: str, recorder: Recorder) -> AsyncGenerator[ServerEvent, None]:
    """Close the turn: answer every open call, store the answer, then announce it."""
    try:  # a result stored while the turn was stopped is still announced, before the end
        for waiting in await announced(turn):
            yield waiting
    except SwitchboardError:
        turn.announcement = None  # the closing commit tries again, and says so if it fails
    restarted = turn.stopped_by == "restart"
    if restarted:
        finish = "error"
        turn.error = ErrorEvent(
            code="internal",
            message="The server restarted while this answer was being written.",
            action="Ask again.",
        )
        yield turn.error
    unanswered = []
    for call in turn.open_calls:
        # A gateway call names the tool it runs (once known), not the gateway.
        tool, server = turn.tools_of_calls.get(call.id, (call.name, ""))
        text = unfinished_text(
            turn.stopped_by if finish in ("cancelled", "error") else None,
            call.id in turn.awaiting_approval,
            call.id in turn.awaiting_answer,
        )
        reply = ToolReply(id=new_id(), call_id=call.id, tool=tool, server=server, ok=False, text=text)
        recorder.keep(turn, reply, {"turn": turn.message_id, "content": reply.text})
        unanswered.append(ToolResultEvent(call_id=call.id, tool=tool, server=server, ok=False, content=text))
    turn.open_calls = []
    answer = AssistantText(id=turn.message_id, text=turn.round_text, finish_reason=finish)
    usage = _usage_dict(turn.usage)
    error = turn.error.model_dump(exclude={"type"}, exclude_none=True) if turn.error and finish == "error" else None
    recorder.keep(turn, answer, {"turn": turn.message_id, "usage": usage, "error": error})
    # A long answer renders in a thread beside the commit; a short one after it, on the loop.
    text = turn.text
    rendering = asyncio.ensure_future(rendered(text)) if len(text) > INLINE_CHARS else None
    if rendering is not None:
        rendering.add_done_callback(retrieved)
    try:
        await recorder.commit(turn)
    except SwitchboardError as exc:
        yield ErrorEvent.of(exc)
        finish = "error"
    else:
        if restarted:  # a page still attached hears it; a user's Stop is shown by the page itself
            for event in unanswered:
                yield event
    html = await rendering if rendering is not None else render_markdown(text)
    yield MessageDone(
        message_id=turn.message_id,
        finish_reason=finish,  # type: ignore[arg-type]
        usage=usage,
        html=html,
        conversation_id=turn.conversation_id,
        user_message_id=turn.user_message_id,
    )


def _usage_dict(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
