"""What a hook answers, and what the host keeps of it.

A hook's answer is JSON: ``{"decision": "allow" | "deny" | "ask" | "modify", "reason"?: str,
"arguments"?: {...}, "content"?: str, "prompt"?: str}``. ``ask`` is an answer only where the user can
be asked (``pre_tool``, ``permission_request``); ``modify`` only where there is something to change
(``arguments`` at ``pre_tool``, ``content`` at ``post_tool``, ``prompt`` at ``prompt_submit``).
Anything else is an unreadable answer, which counts as the hook failing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "FAIL_CLOSED",
    "POINTS",
    "Decision",
    "HookFailure",
    "HookRecord",
    "Verdict",
    "parse_decision",
]

Point = Literal[
    "session_start", "prompt_submit", "pre_model", "pre_tool", "permission_request", "post_tool", "turn_end"
]
POINTS: tuple[str, ...] = (
    "session_start",
    "prompt_submit",
    "pre_model",
    "pre_tool",
    "permission_request",
    "post_tool",
    "turn_end",
)
# Where a hook that fails denies (unless its `on_error` says otherwise): before anything runs.
FAIL_CLOSED = frozenset({"prompt_submit", "pre_model", "pre_tool", "permission_request"})
_ASK_AT = frozenset({"pre_tool", "permission_request"})
_MODIFIES = {"pre_tool": "arguments", "post_tool": "content", "prompt_submit": "prompt"}
MAX_REASON_CHARS = 1_000


class HookFailure(Exception):
    """A hook could not give a decision: it timed out, crashed, or answered something unreadable."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Decision:
    kind: Literal["allow", "deny", "ask", "modify"]
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    content: str | None = None
    prompt: str | None = None


@dataclass(frozen=True, slots=True)
class HookRecord:
    """One hook's part in one decision, as a tool call's audit record keeps it."""

    hook: str
    event: str
    decision: str  # allow | deny | ask | modify: what the host did with the hook's answer
    duration_ms: float
    reason: str | None = None
    error: str | None = None  # why the hook failed, when it did

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "hook": self.hook,
            "event": self.event,
            "decision": self.decision,
            "duration_ms": round(self.duration_ms, 3),
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(slots=True)
class Verdict:
    """The hooks of one point, combined: the first deny ends it; an ask stays; modifications apply
    in order (each hook sees the previous hook's changes)."""

    denied: str | None = None  # the reason, when a hook denied
    ask: str | None = None  # the reason the user must approve, when a hook asked
    arguments: dict[str, Any] | None = None
    content: str | None = None
    prompt: str | None = None
    records: list[HookRecord] = field(default_factory=list)


def _reason(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise HookFailure("its 'reason' is not a string")
    return value.strip()[:MAX_REASON_CHARS] or None


def parse_decision(data: Any, point: str) -> Decision:
    """A hook's answer as a decision; raises HookFailure for anything unreadable."""
    if not isinstance(data, dict):
        raise HookFailure("its answer is not a JSON object")
    kind = data.get("decision")
    if kind not in ("allow", "deny", "ask", "modify"):
        raise HookFailure(f"its answer's 'decision' is {str(kind)[:40]!r}, not allow, deny, ask or modify")
    reason = _reason(data.get("reason"))
    if kind == "ask" and point not in _ASK_AT:
        raise HookFailure(f"'ask' is not an answer at {point}")
    if kind != "modify":
        return Decision(kind, reason)
    what = _MODIFIES.get(point)
    if what is None:
        raise HookFailure(f"'modify' is not an answer at {point}")
    value = data.get(what)
    wanted = dict if what == "arguments" else str
    if not isinstance(value, wanted):
        raise HookFailure(f"'modify' at {point} needs '{what}' ({'an object' if wanted is dict else 'a string'})")
    if isinstance(value, dict):
        return Decision("modify", reason, arguments=value)
    return Decision("modify", reason, content=value) if what == "content" else Decision("modify", reason, prompt=value)
