"""A stdio MCP server with many small tools (300 by default, `--count N`), named and described
like a large real catalogue: what a big server does to the page's tools panel."""

from __future__ import annotations

import argparse

from fastmcp import FastMCP
from fastmcp.tools import Tool

AREAS = ["invoice", "customer", "ticket", "shipment", "contract", "report", "meeting", "budget", "asset", "vendor"]
ACTIONS = [
    "create",
    "read",
    "update",
    "archive",
    "search",
    "export",
    "approve",
    "assign",
    "comment",
    "summarize",
    "merge",
    "tag",
    "restore",
    "share",
    "audit",
    "notify",
    "price",
    "schedule",
    "translate",
    "validate",
    "count",
    "compare",
    "forecast",
    "import",
    "lock",
    "unlock",
    "rename",
    "link",
    "unlink",
    "review",
]


def catalogue(count: int) -> FastMCP:
    mcp = FastMCP("many")
    for i in range(count):
        area, action = AREAS[i % len(AREAS)], ACTIONS[(i // len(AREAS)) % len(ACTIONS)]
        name = f"{action}_{area}" if i < len(AREAS) * len(ACTIONS) else f"{action}_{area}_{i}"

        description = f"{action.capitalize()} a {area} record in the back office (item id optional)."
        mcp.add_tool(
            Tool.from_function(_tool(name), name=name, description=description, annotations={"readOnlyHint": True})
        )
    return mcp


def _tool(name: str):
    def run(item_id: str = "") -> str:
        return f"{name} done for {item_id or 'everything'}"

    return run


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=300)
    catalogue(parser.parse_args().count).run(show_banner=False)
