"""An MCP server that misbehaves on request, for the host's fault tests.

Runs over stdio.  `--garbage-at-start` prints lines that are not JSON-RPC to
stdout before serving.  Tools that need a test to reach the process from
outside (to kill it, or to see whether it still works after a cancel) write
to a file the test names."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import time
from pathlib import Path

import mcp_types
from fastmcp import Context, FastMCP

mcp = FastMCP("faulty")

READ_ONLY = {"readOnlyHint": True}


def _write_atomically(path: str, text: str) -> None:
    target = Path(path)
    partial = target.with_name(target.name + ".part")
    partial.write_text(text)
    partial.replace(target)


@mcp.tool(annotations=READ_ONLY)
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool(annotations=READ_ONLY)
async def wait(seconds: float, pid_file: str = "") -> str:
    """Write the process id to `pid_file` (when given), then sleep silently."""
    if pid_file:
        _write_atomically(pid_file, str(os.getpid()))
    await asyncio.sleep(seconds)
    return f"waited {seconds:g} s"


@mcp.tool(annotations=READ_ONLY)
async def hang() -> str:
    """Never answer, and never report anything."""
    await asyncio.sleep(3600)
    return "unreachable"


@mcp.tool(annotations=READ_ONLY)
async def progress_for(
    seconds: float, interval_s: float = 0.2, heartbeat_file: str = "", ctx: Context | None = None
) -> str:
    """Report progress every `interval_s` for `seconds`; each step also appends a
    line to `heartbeat_file` (when given), so a test sees whether the work goes on."""
    started = time.monotonic()
    steps = 0
    while time.monotonic() - started < seconds:
        await asyncio.sleep(interval_s)
        steps += 1
        if heartbeat_file:
            with open(heartbeat_file, "a") as handle:
                handle.write(f"{steps}\n")
        if ctx is not None:
            await ctx.report_progress(steps, None, f"step {steps}")
    return f"done after {steps} steps"


@mcp.tool(annotations=READ_ONLY)
async def progress_then_hang(steps: int = 3, interval_s: float = 0.2, ctx: Context | None = None) -> str:
    """Report `steps` progress notifications, then go silent for ever."""
    for step in range(steps):
        await asyncio.sleep(interval_s)
        if ctx is not None:
            await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    await asyncio.sleep(3600)
    return "unreachable"


@mcp.tool(annotations=READ_ONLY)
def big_text(chars: int) -> str:
    """A plain text result of `chars` characters (a marker at the start and the end)."""
    body = "0123456789" * (chars // 10 + 1)
    return "BEGIN" + body[: max(0, chars - 8)] + "END"


@mcp.tool(annotations=READ_ONLY)
def big_artifact(b64_chars: int) -> dict:
    """A V2 result with one artifact whose base64 is `b64_chars` long, and one small one."""
    size = b64_chars - b64_chars % 4
    return {
        "results": {"summary": "one big file, one small file"},
        "artifacts": [
            {"name": "huge.bin", "b64": "A" * size, "mime": "application/octet-stream"},
            {"name": "small.txt", "b64": base64.b64encode(b"small and fine").decode(), "mime": "text/plain"},
        ],
    }


@mcp.tool(annotations=READ_ONLY)
async def ask_name(ctx: Context) -> str:
    """Ask the user for a name (elicitation), then answer with it."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    # 2026-07-28 connections ask with the guard pattern (return InputRequiredResult
    # and read the answer when called again); older ones with a server request.
    answers = ctx.input_responses or {}
    if "who" in answers:
        answer = answers["who"]
    elif ctx._is_modern_protocol():
        request = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="Who are you?", requested_schema=schema)
        )
        return mcp_types.InputRequiredResult(input_requests={"who": request})
    else:
        answer = await ctx.session.elicit(
            message="Who are you?", requested_schema=schema, related_request_id=ctx.request_id
        )
    return f"hello {answer.content['name']}" if answer.action == "accept" else f"no answer ({answer.action})"


NOISE = [
    "this is not JSON",
    '{"half": ',
    "[]",
    json.dumps({"jsonrpc": "2.0", "id": 987654, "result": {}}),  # an answer to a request nobody sent
    json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "nobody", "progress": 1}}
    ),
]


@mcp.tool(annotations=READ_ONLY)
def noisy() -> str:
    """Write lines that are not (or not valid) JSON-RPC to stdout, then answer."""
    os.write(1, ("\n".join(NOISE) + "\n").encode())
    return "answered after the noise"


@mcp.tool(annotations=READ_ONLY)
def binary_noise() -> str:
    """Write a line that is not UTF-8 to stdout, then answer."""
    os.write(1, b"\xff\xfe\xfa not utf-8 \x80\n")
    return "answered after binary noise"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--garbage-at-start", action="store_true")
    args = parser.parse_args()
    if args.garbage_at_start:
        os.write(1, b"Starting faulty server v0.0 (this banner breaks the protocol)\n*** debug mode ***\n")
    mcp.run(show_banner=False)


if __name__ == "__main__":
    main()
