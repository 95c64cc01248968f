"""A FastMCP server whose tools run as background tasks (MCP extension
`io.modelcontextprotocol/tasks`, served by the `fastmcp-tasks` package on an in-memory queue).
Runs over stdio, or on 127.0.0.1 with `--http PORT` (stateless streamable HTTP).

Tools (all task `required`, so the host always gets a task handle):
- `crunch(steps, delay)`: long work, reporting progress (`step i of n`) after each step.
- `survey(topic)`: needs input midway: does a little work, asks the user for a colour (the task
  waits in `input_required`), then finishes with the answer.
- `doomed(after)`: fails after a while.
- `forever()`: works until cancelled.
- `report()`: finishes at once with a V2 result and a CSV artifact.
- `until_file(path)`: works until the file exists (a test decides when the work ends).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

from mcp import MCPError

COLOUR = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


def build(poll_ms: int = 200, concurrency: int = 10) -> FastMCP:
    mcp = FastMCP("tasker")
    mcp.add_extension(TasksExtension(concurrency=concurrency))
    task = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=poll_ms))

    @mcp.tool(task=task, annotations={"readOnlyHint": True})
    async def crunch(ctx: Context, steps: int = 5, delay: float = 0.3) -> str:
        """Crunch numbers for a while, step by step."""
        for step in range(1, steps + 1):
            await asyncio.sleep(delay)
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"crunched {steps} steps"

    @mcp.tool(task=task, annotations={"readOnlyHint": True})
    async def survey(ctx: Context, topic: str = "paint") -> Any:
        """Survey a topic; asks the user a question midway."""
        answers = ctx.input_responses or {}
        if "colour" not in answers:
            await asyncio.sleep(0.2)
            ask = mcp_types.ElicitRequest(
                params=mcp_types.ElicitRequestFormParams(
                    message=f"Which colour for the {topic}?", requested_schema=COLOUR
                )
            )
            return mcp_types.InputRequiredResult(
                input_requests={"colour": ask}, request_state=json.dumps({"topic": topic})
            )
        answer = answers["colour"]
        if answer.action != "accept":
            return f"survey of {topic}: no colour ({answer.action})"
        await asyncio.sleep(0.2)
        return f"survey of {topic}: {answer.content['colour']}"

    @mcp.tool(task=task, annotations={"readOnlyHint": True})
    async def doomed(after: float = 0.3) -> str:
        """Work a little, then fail."""
        await asyncio.sleep(after)
        # A protocol error fails the task (status `failed`); a ToolError would complete it with isError.
        raise MCPError(code=mcp_types.INTERNAL_ERROR, message="the disk is full")

    @mcp.tool(task=task, annotations={"readOnlyHint": True})
    async def forever(ctx: Context) -> str:
        """Work until cancelled."""
        step = 0
        while True:
            step += 1
            await asyncio.sleep(0.1)
            if step % 5 == 0:
                await ctx.report_progress(step, None, f"still working ({step})")

    @mcp.tool(task=task, annotations={"readOnlyHint": True})
    async def until_file(ctx: Context, path: str) -> str:
        """Work until a file appears."""
        await ctx.report_progress(0, None, "waiting for the file")
        while not Path(path).exists():
            await asyncio.sleep(0.1)
        return f"the file came: {Path(path).read_text()}"

    @mcp.tool(task=task, annotations={"readOnlyHint": True})
    async def report() -> dict[str, Any]:
        """A finished report with a CSV file."""
        csv = base64.b64encode(b"a,b\n1,2\n").decode()
        return {
            "results": {"summary": "2 columns, 1 row"},
            "artifacts": [{"name": "report.csv", "b64": csv, "mime": "text/csv"}],
        }

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--poll-ms", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    mcp = build(args.poll_ms, args.concurrency)
    if args.http:
        mcp.run(transport="http", host="127.0.0.1", port=args.http, show_banner=False, stateless_http=True)
    else:
        mcp.run(show_banner=False)


if __name__ == "__main__":
    main()
