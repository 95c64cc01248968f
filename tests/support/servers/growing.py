"""A stdio MCP server whose tool list changes at run time: `grow` adds the tool
`count_words` and sends notifications/tools/list_changed."""

from __future__ import annotations

import mcp_types
from fastmcp import Context, FastMCP

mcp = FastMCP("growing")


def count_words(text: str) -> str:
    """Count the words of a text."""
    return str(len(text.split()))


@mcp.tool(annotations={"readOnlyHint": True})
async def grow(ctx: Context) -> str:
    """Add the tool count_words to this server."""
    mcp.add_tool(count_words)
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return "grown"


if __name__ == "__main__":
    mcp.run(show_banner=False)
