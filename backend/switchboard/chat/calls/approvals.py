"""When a tool call needs a person's yes (the `approval` setting of mcp.json), and
whether edited arguments still fit the tool."""

from __future__ import annotations

from typing import Any

from ...config.models import ServerConfig
from ...tools import ToolInfo

__all__ = ["allowance_key", "approval_reason", "schema_problem"]


def allowance_key(tool: ToolInfo, app_digest: str | None = None) -> str:
    """ "Allow for this conversation" holds for this definition of the tool (and of its app) only."""
    key = f"{tool.qualified_name}#{tool.definition_hash}"
    return f"{key}#{app_digest[:16]}" if app_digest else key


def approval_reason(
    tool: ToolInfo,
    config: ServerConfig,
    allowed_for_conversation: set[str],
    app_digest: str | None = None,
    app_changed: bool = False,
) -> str | None:
    """Why this call needs approval, or None when it may run. `app_changed`: the tool's MCP App
    (its `ui://` resource) is not the one the host first saw."""
    if tool.name in config.require_approval or tool.qualified_name in config.require_approval:
        return "the server's configuration requires approval for this tool"
    if allowance_key(tool, app_digest) in allowed_for_conversation:
        return None
    if app_changed:
        return (
            "the tool's app (its ui:// resource: the interface the server ships) changed since it was "
            "first seen; check it before approving"
        )
    if tool.name in config.skip_approval or tool.qualified_name in config.skip_approval:
        return None  # the site overrides the server's annotations for this tool
    if config.approval == "always":
        return "this server's tools always need approval"
    if config.approval == "destructive" and tool.destructive:
        if tool.annotations.get("destructiveHint"):
            return "the tool says it may change or delete data"
        return "the tool does not say it is read-only, so it may change data"
    return None


def schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not fit the tool's input schema, or None."""
    import jsonschema  # only for edited arguments: not loaded at start-up

    try:
        jsonschema.validate(arguments, schema or {"type": "object"})
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
        return f"{where}: {exc.message}"
    except jsonschema.SchemaError:
        return None  # the server's schema is broken; the server will judge the arguments itself
    return None
