"""The event a hook is given: what the point knows, and never a secret. It is built from the
named facts below only (never from config, settings or the environment), so model keys, the
proxy secret, servers' env and headers and OAuth tokens cannot reach it; a tool's `result` is cut
at RESULT_CAP_CHARS."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RESULT_CAP_CHARS", "Facts", "event_of"]

RESULT_CAP_CHARS = 8_000


@dataclass(slots=True)
class Facts:
    email: str
    groups: tuple[str, ...] = ()
    conversation_id: str | None = None
    compliance_level: str | None = None
    model: str | None = None
    tool: str | None = None
    server: str | None = None
    arguments: dict[str, Any] | None = None
    result: str | None = None
    ok: bool | None = None
    prompt: str | None = None
    reason: str | None = None  # permission_request: why the host asks
    from_app: str | None = None  # the call id of the MCP App making the call
    finish_reason: str | None = None  # turn_end
    annotations: dict[str, Any] = field(default_factory=dict)  # the tool's own annotations


_OPTIONAL = ("tool", "server", "arguments", "ok", "prompt", "reason", "from_app", "finish_reason")


def event_of(point: str, facts: Facts) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event": point,
        "user": {"email": facts.email, "groups": sorted(facts.groups)},
        "conversation_id": facts.conversation_id,
        "compliance_level": facts.compliance_level,
        "model": facts.model,
    }
    for name in _OPTIONAL:
        value = getattr(facts, name)
        if value is not None:
            event[name] = value
    if facts.tool is not None:
        event["annotations"] = facts.annotations
    if facts.result is not None:
        event["result"] = facts.result[:RESULT_CAP_CHARS]
        if len(facts.result) > RESULT_CAP_CHARS:
            event["result_truncated"] = True
    return event
