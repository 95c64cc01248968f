"""An MCP server with MCP Apps, for the host's tests (stdio). Its app is a tiny counter page;
its tools show every kind of app tool: a model tool with an app, one with the older flat
`_meta["ui/resourceUri"]`, tools only apps may call (one read-only, one that changes data),
and one only the model may call. `APP_HTML_NOTE` (environment) changes the app's HTML."""

from __future__ import annotations

import os

from fastmcp import Context, FastMCP
from fastmcp.apps.config import UI_EXTENSION_ID, AppConfig, ResourceCSP, ResourcePermissions
from fastmcp.tools import ToolResult
from mcp_types import TextContent

APP_URI = "ui://counter/app.html"
HTML = """<!doctype html><html><body><p id="count">?</p><!-- {note} -->
<script>window.parent.postMessage({{jsonrpc: "2.0", id: 1, method: "ui/initialize", params: {{}}}}, "*");</script>
</body></html>"""

mcp = FastMCP("apps")


@mcp.tool(annotations={"readOnlyHint": True}, app=AppConfig(resource_uri=APP_URI))
def show_counter(start: int = 0) -> ToolResult:
    """Show a counter that starts at `start`."""
    return ToolResult(
        content=[TextContent(type="text", text=f"counter at {start}")],
        structured_content={"count": start},
        meta={"shown_by": "apps"},
    )


@mcp.tool(annotations={"readOnlyHint": True}, meta={"ui/resourceUri": APP_URI})
def legacy_counter() -> str:
    """A counter announced the older way."""
    return "legacy counter"


@mcp.tool(annotations={"readOnlyHint": True}, app=AppConfig(visibility=["app"]))
def bump(count: int, username: str = "") -> dict:
    """Add one (apps only)."""
    return {"count": count + 1, "user": username}


@mcp.tool(annotations={"destructiveHint": True}, app=AppConfig(visibility=["app"]))
def reset() -> str:
    """Set the counter to zero (apps only; changes data)."""
    return "reset"


@mcp.tool(annotations={"readOnlyHint": True}, app=AppConfig(visibility=["model"]))
def model_only() -> str:
    """Only the model may call this."""
    return "model only"


@mcp.tool(annotations={"readOnlyHint": True})
def ui_extension(ctx: Context) -> str:
    """Whether the client advertised the MCP Apps extension."""
    return f"ui={ctx.client_supports_extension(UI_EXTENSION_ID)}"


@mcp.resource(
    APP_URI,
    app=AppConfig(
        csp=ResourceCSP(
            connect_domains=["https://api.example.com", "http://evil.example.com", "https://x.example.com/path"],
            resource_domains=["https://*.cdn.example.com", "*"],
        ),
        permissions=ResourcePermissions(camera={}, clipboard_write={}),
        prefers_border=True,
    ),
)
def counter_app() -> str:
    return HTML.format(note=os.environ.get("APP_HTML_NOTE", "first"))


@mcp.resource("data://counter/notes")
def notes() -> str:
    return "counter notes"


if __name__ == "__main__":
    mcp.run(show_banner=False)
