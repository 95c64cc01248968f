"""An MCP server (stdio) whose one tool answers with the trace context its request carried in
`params._meta` (`traceparent`), for the telemetry tests."""

from __future__ import annotations

from typing import Any

from fastmcp import Context, FastMCP

mcp = FastMCP("traced")


def _field(meta: Any, name: str) -> Any:
    if meta is None:
        return None
    if isinstance(meta, dict):
        return meta.get(name)
    return getattr(meta, name, None) or (getattr(meta, "model_extra", None) or {}).get(name)


@mcp.tool(annotations={"readOnlyHint": True})
def traceparent(ctx: Context) -> str:
    """The W3C traceparent this call arrived with ('none' without one)."""
    rc = ctx.request_context
    return str(_field(rc.meta if rc is not None else None, "traceparent") or "none")


if __name__ == "__main__":
    mcp.run(show_banner=False)
