"""A tool call as its audit record (audit/, docs/audit.md): written once, where every
call ends (`CallRunner.run`), whatever the outcome. The record never carries the arguments
themselves unless SWITCHBOARD_AUDIT_ARGUMENTS=full, only the sha256 of their canonical JSON."""

from __future__ import annotations

import json
from typing import Any, Protocol

from ...audit.writer import Auditor
from ...llm.types import ToolCallRequest
from ...policy import HookRecord
from ..events import ToolResultEvent
from ..turn_state import TurnState

__all__ = ["audit_call", "audit_cancelled"]


class ExecutedCall(Protocol):  # what calls.py's ExecutedCall gives the record
    event: ToolResultEvent
    arguments: dict[str, Any] | None
    approval: dict[str, Any] | None
    decision: str
    pin: str | None
    hooks: list[HookRecord]


def audit_call(
    audit: Auditor | None, request: ToolCallRequest, executed: ExecutedCall, turn: TurnState, from_app: str | None
) -> None:
    if audit is None:
        return
    event = executed.event
    arguments = executed.arguments if executed.arguments is not None else _as_sent(request.arguments)
    approval = dict(executed.approval, by=turn.user.email) if executed.approval is not None else None
    audit.record(
        "app_call" if from_app is not None else "tool_call",
        user=turn.user.email,
        conversation_id=turn.conversation_id,
        call_id=request.id,
        server=event.server or None,
        tool=event.tool,
        pin=executed.pin,
        hooks=[hook.as_dict() for hook in executed.hooks],
        decision=executed.decision,
        reason=None if executed.decision == "allow" else event.content[:500],
        approval=approval,
        outcome={"ok": event.ok},
        duration_ms=event.duration_ms,
        from_app=from_app,
        **audit.arguments(arguments),
    )


def audit_cancelled(
    audit: Auditor | None, request: ToolCallRequest, turn: TurnState, from_app: str | None, duration_ms: int
) -> None:
    """A call stopped with its turn (the user cancelled, or the app stops): what ran is unknown."""
    if audit is not None:
        audit.record(
            "app_call" if from_app is not None else "tool_call",
            user=turn.user.email,
            conversation_id=turn.conversation_id,
            call_id=request.id,
            tool=request.name,
            hooks=[],
            decision="error",
            reason="cancelled with its turn",
            outcome={"ok": False, "cancelled": True},
            duration_ms=duration_ms,
            from_app=from_app,
            **audit.arguments(_as_sent(request.arguments)),
        )


def _as_sent(text: str) -> Any:
    """A call that did not run: its arguments as the model sent them (parsed, when they parse)."""
    try:
        return json.loads(text)
    except ValueError:
        return text
