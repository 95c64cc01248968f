"""When a tool call needs a person's yes (ARCHITECTURE §2 `approval`)."""

from __future__ import annotations

from ..config.models import ServerConfig
from ..tools import ToolInfo

__all__ = ["approval_reason"]


def approval_reason(tool: ToolInfo, config: ServerConfig, allowed_for_conversation: set[str]) -> str | None:
    """Why this call needs approval, or None when it may run."""
    if tool.name in config.require_approval or tool.qualified_name in config.require_approval:
        return "the server's configuration requires approval for this tool"
    if tool.qualified_name in allowed_for_conversation:
        return None
    if config.approval == "always":
        return "this server's tools always need approval"
    if config.approval == "destructive" and tool.destructive:
        if tool.annotations.get("destructiveHint"):
            return "the tool says it may change or delete data"
        return "the tool does not say it is read-only, so it may change data"
    return None
