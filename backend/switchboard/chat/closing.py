"""The end of a turn: what waited for a commit announced, every open call answered, the answer
stored, then `message_done`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from ..errors import SwitchboardError
from ..history import AssistantText, ToolReply
from ..llm.types import Usage
from ..store.message_data import AssistantData, ErrorData, UsageData
from .calls.unfinished import unfinished_text
from .conversation_state import new_id
from .events import ErrorEvent, MessageDone, ServerEvent, ToolResultEvent
from .tool_round import Recorder
from .turn_state import TurnState, retrieved
from .views.live_render import final_html
from .views.render import INLINE_CHARS, render_markdown

__all__ = ["close_turn"]


async def close_turn(turn: TurnState, finish: str, recorder: Recorder) -> AsyncGenerator[ServerEvent, None]:
    """Close the turn: answer every open call, store the answer, then announce it."""
    try:  # a result stored while the turn was stopped is still announced, before the end
        for waiting in await turn.writes.announced():
            yield waiting
    except SwitchboardError:
        turn.writes.announcement = None  # the closing commit tries again, and says so if it fails
    restarted = turn.stop.stopped_by == "restart"
    if restarted:
        finish = "error"
        turn.progress.error = ErrorEvent(
            code="internal",
            message="The server restarted while this answer was being written.",
            action="Ask again.",
        )
        yield turn.progress.error
    unanswered = []
    for call in turn.progress.open_calls:
        # A gateway call names the tool it runs (once known), not the gateway.
        tool, server = turn.progress.tools_of_calls.get(call.id, (call.name, ""))
        text = unfinished_text(
            turn.stop.stopped_by if finish in ("cancelled", "error") else None,
            call.id in turn.stop.awaiting_approval,
            call.id in turn.stop.awaiting_answer,
        )
        reply = ToolReply(id=new_id(), call_id=call.id, tool=tool, server=server, ok=False, text=text)
        recorder.keep(turn, reply, {"turn": turn.message_id, "content": reply.text})
        unanswered.append(ToolResultEvent(call_id=call.id, tool=tool, server=server, ok=False, content=text))
    turn.progress.open_calls = []
    answer = AssistantText(id=turn.message_id, text=turn.round_text, finish_reason=finish)
    usage = _usage_dict(turn.progress.usage)
    answer_data: AssistantData = {"turn": turn.message_id}
    if turn.progress.usage is not None:
        answer_data["usage"] = _usage_data(turn.progress.usage)
    if turn.progress.error and finish == "error":
        answer_data["error"] = _error_data(turn.progress.error)
    recorder.keep(turn, answer, answer_data)
    # A long answer renders in a thread beside the commit; a short one after it, on the loop.
    text = turn.text
    rendering = asyncio.ensure_future(final_html(turn.progress.live, text)) if len(text) > INLINE_CHARS else None
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
    html, settled = await rendering if rendering is not None else (render_markdown(text), 0)
    # The renders' finished blocks begin the final HTML only where the answer is one reply's text
    # (a page that drew them then needs only the rest: web/ws.py).
    one_reply = len(turn.progress.round_answer) == len(turn.progress.answer)
    yield MessageDone(
        message_id=turn.message_id,
        finish_reason=finish,  # type: ignore[arg-type]
        usage=usage,
        html=html,
        settled_chars=settled if settled and one_reply else None,
        conversation_id=turn.conversation_id,
        user_message_id=turn.progress.user_message_id,
    )


def _usage_data(usage: Usage) -> UsageData:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def _error_data(error: ErrorEvent) -> ErrorData:
    data: ErrorData = {"code": error.code, "message": error.message}
    if error.action is not None:
        data["action"] = error.action
    return data


def _usage_dict(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
