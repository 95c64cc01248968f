"""An MCP server built on the SDK's own `MCPServer`, which serves `subscriptions/listen`
(MCP 2026-07-28) and gives cache hints (`ttlMs`, `cacheScope`) on its lists and reads.

    --scope public|private   the `cacheScope` of its results
    --ttl-ms N               their `ttlMs` (default 60 s; 0 gives no hints)

Tools: `grow` adds the tool `count_words` and announces the change to listeners; `touch`
announces that `data://counter` changed. The resource `data://counter` says how many
times it has been read, so a test can tell a cached read from one that reached the server.
"""

from __future__ import annotations

import argparse
from typing import get_args

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp_types.methods import CacheableMethod

reads = 0


def build(scope: str, ttl_ms: int = 60_000) -> MCPServer:
    hints = dict.fromkeys(get_args(CacheableMethod), CacheHint(ttl_ms=ttl_ms, scope=scope))  # type: ignore[arg-type]
    server = MCPServer("listening", cache_hints=hints if ttl_ms else None)

    def count_words(text: str) -> str:
        """Count the words of a text."""
        return str(len(text.split()))

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool count_words to this server."""
        server.add_tool(count_words)
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool()
    async def touch(ctx: Context) -> str:
        """Say that data://counter changed."""
        await ctx.notify_resource_updated("data://counter")
        return "touched"

    @server.resource("data://counter")
    def counter() -> str:
        """How many times this resource has been read."""
        global reads
        reads += 1
        return f"read {reads}"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scope", choices=["public", "private"], default="public")
    parser.add_argument("--ttl-ms", type=int, default=60_000, help="0: no cache hints")
    args = parser.parse_args()
    build(args.scope, args.ttl_ms).run()
