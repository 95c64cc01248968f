"""Cedar policies as a hook (`{"type": "cedar", "policies": "file.cedar"}`): `principal` is
`User::"<email>"` in its `Group::"<name>"`s, `action` is `Action::"<point>"`, `resource` is
`Tool::"<qualified name>"` (attributes `server`, `compliance_level`, `read_only`, `destructive`) or,
at points without a tool, `Conversation::"<id>"`. Cedar denies unless a policy permits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cedarpy

from .decisions import Decision, HookFailure

__all__ = ["CedarHandler"]


class CedarHandler:
    def __init__(self, policies_file: Path) -> None:
        """Raises ValueError when the file cannot be read or parsed."""
        try:
            text = policies_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"policies file '{policies_file.name}' cannot be read: {exc}") from None
        try:
            self._policies = cedarpy.PolicySet.from_str(text)
        except ValueError as exc:
            raise ValueError(f"policies file '{policies_file.name}' is not valid Cedar: {str(exc)[:300]}") from None

    async def decide(self, event: dict[str, Any], point: str) -> Decision:
        user = event["user"]
        groups = [{"type": "Group", "id": g} for g in user["groups"]]
        entities: list[dict[str, Any]] = [
            {"uid": {"type": "User", "id": user["email"]}, "attrs": {}, "parents": groups},
            *({"uid": g, "attrs": {}, "parents": []} for g in groups),
        ]
        if "tool" in event:
            annotations = event.get("annotations") or {}
            resource = {"type": "Tool", "id": event["tool"]}
            attrs = {
                "server": event.get("server") or "",
                "compliance_level": event.get("compliance_level") or "",
                "read_only": bool(annotations.get("readOnlyHint")),
                "destructive": bool(annotations.get("destructiveHint")),
            }
        else:
            resource = {"type": "Conversation", "id": event.get("conversation_id") or ""}
            attrs = {"compliance_level": event.get("compliance_level") or ""}
        entities.append({"uid": resource, "attrs": attrs, "parents": []})
        request = {
            "principal": f'User::"{_quoted(user["email"])}"',
            "action": f'Action::"{point}"',
            "resource": f'{resource["type"]}::"{_quoted(resource["id"])}"',
            "context": {},
        }
        result = cedarpy.is_authorized(request, self._policies, entities)
        if result.diagnostics.errors:
            raise HookFailure(f"Cedar could not decide: {'; '.join(map(str, result.diagnostics.errors))[:300]}")
        if result.allowed:
            return Decision("allow")
        reasons = ", ".join(result.diagnostics.reasons)
        return Decision("deny", f"Cedar policy {reasons} forbids it" if reasons else "no Cedar policy permits it")


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
