"""A tool call the server runs as a background task (MCP Tasks): handed to the process's task
poller (chat/tasks/poller.py), which keeps it with the conversation; the call's own result says so."""

from __future__ import annotations

from typing import Any, Protocol

from ...errors import SwitchboardError
from ...tools import ToolInfo, ToolOutcome
from ..events import TaskEvent
from ..turn_state import TurnState
from .asks import Emit

__all__ = ["TaskAdopter", "adopt_task"]


class TaskAdopter(Protocol):
    async def adopt(
        self, handle: Any, *, owner: str, conversation_id: str, server: str, tool: str, call_id: str
    ) -> TaskEvent: ...


async def adopt_task(
    tasks: TaskAdopter | None, outcome: ToolOutcome, call_id: str, tool: ToolInfo, turn: TurnState, emit: Emit
) -> ToolOutcome:
    """The server runs the call as a task: the poller keeps it (stored with the conversation),
    and the call's own result says so."""
    if tasks is None:
        return ToolOutcome(ok=False, text="The server started a background task, but this host cannot follow tasks.")
    try:
        event = await tasks.adopt(
            outcome.task,
            owner=turn.user.email,
            conversation_id=turn.conversation_id,
            server=tool.server,
            tool=tool.qualified_name,
            call_id=call_id,
        )
    except SwitchboardError as exc:  # too many tasks running, or the store failed: the call fails, as data
        why = f"{exc.message}. {exc.action}" if exc.action else exc.message
        return ToolOutcome(ok=False, duration_ms=outcome.duration_ms, text=why)
    await emit(event)
    return ToolOutcome(
        ok=True,
        duration_ms=outcome.duration_ms,
        text=(
            f"The server runs this call as a background task (task {event.task_id}). Its result will be added to "
            "this conversation when it finishes; the user sees its progress and can cancel it. Do not call the "
            "tool again for the same work."
        ),
    )
