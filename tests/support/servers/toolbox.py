"""A small MCP server for the host's tests.  Runs over stdio by default;
`--http PORT` or `--sse PORT` serve it on 127.0.0.1 instead."""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from mcp_types import BlobResourceContents, EmbeddedResource, ImageContent, ResourceLink, TextContent

# 1x1 transparent PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

mcp = FastMCP("toolbox")


@mcp.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool(annotations={"readOnlyHint": True})
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@mcp.tool(annotations={"readOnlyHint": True})
def whoami(username: str = "") -> str:
    """Say which user the host says is calling."""
    return f"user={username}"


@mcp.tool(annotations={"readOnlyHint": True})
def env_probe(name: str) -> str:
    """Report whether an environment variable reached the server."""
    return f"{name}={os.environ.get(name, '<unset>')}"


@mcp.tool(annotations={"readOnlyHint": True})
def make_report() -> dict:
    """Return a V2 result with an image and an HTML artifact."""
    return {
        "results": {"summary": "2 files"},
        "artifacts": [
            {"name": "dot.png", "b64": base64.b64encode(PNG).decode(), "mime": "image/png"},
            {"name": "report.html", "b64": base64.b64encode(b"<h1>Report</h1>").decode(), "mime": "text/html"},
        ],
        "display": {"open_canvas": True, "primary_file": "report.html"},
    }


@mcp.tool(annotations={"readOnlyHint": True})
def picture() -> list:
    """Return an MCP image content block."""
    return [
        TextContent(type="text", text="a picture"),
        ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
    ]


@mcp.resource("toolbox://readme", mime_type="text/markdown")
def readme() -> str:
    """How to use the toolbox."""
    return "# Toolbox\nThe secret word is *marmalade*."


@mcp.prompt
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Please review this {language} code:\n{code}"


@mcp.resource("toolbox://notes/{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note, readable as an MCP resource."""
    return f"note {name}"


@mcp.tool(annotations={"readOnlyHint": True})
def three_kinds() -> list:
    """Return an image block, an embedded blob and a link to an MCP resource."""
    return [
        ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="toolbox://blobs/data.bin",
                mime_type="application/octet-stream",
                blob=base64.b64encode(b"\x00\x01\x02").decode(),
            ),
        ),
        ResourceLink(type="resource_link", name="alpha.txt", uri="toolbox://notes/alpha", mime_type="text/plain"),
    ]


@mcp.tool(annotations={"readOnlyHint": True})
async def fetch(file_url: str) -> str:
    """Download a file the host handed over and report its size."""
    import httpx

    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.get(file_url)
    if response.status_code != 200:
        raise ToolError(f"download failed: HTTP {response.status_code}")
    return f"{len(response.content)} bytes"


@mcp.tool(annotations={"readOnlyHint": True})
async def slow(steps: int = 3, delay_s: float = 0.2, ctx: Context | None = None) -> str:
    """Count slowly, reporting progress."""
    for i in range(steps):
        await asyncio.sleep(delay_s)
        if ctx is not None:
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"counted {steps}"


@mcp.tool(annotations={"readOnlyHint": True})
async def hang() -> str:
    """Never answer."""
    await asyncio.sleep(3600)
    return "unreachable"


NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@mcp.tool(annotations={"readOnlyHint": True})
async def ask_name(ctx: Context) -> str:
    """Ask the user for their name and age (elicitation)."""
    # 2026-07-28 connections ask with the guard pattern (return InputRequiredResult
    # and read the answer when called again); older ones with a server request.
    answers = ctx.input_responses or {}
    if "who" in answers:
        answer = answers["who"]
        if answer.action == "accept":
            return f"hello {answer.content['name']}, age {answer.content['age']}"
        return f"no answer ({answer.action})"
    if ctx._is_modern_protocol():
        request = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message="Who are you?", requested_schema=NAME_SCHEMA)
        )
        return mcp_types.InputRequiredResult(input_requests={"who": request})
    result = await ctx.session.elicit(
        message="Who are you?", requested_schema=NAME_SCHEMA, related_request_id=ctx.request_id
    )
    if result.action == "accept":
        return f"hello {result.content['name']}, age {result.content['age']}"
    return f"no answer ({result.action})"


@mcp.tool(annotations={"readOnlyHint": True})
async def summarize_with_llm(text: str, ctx: Context) -> str:
    """Ask the host's model to summarise the text (sampling)."""
    answers = ctx.input_responses or {}
    if "summary" in answers:
        return f"summary: {answers['summary'].content.text}"
    message = mcp_types.SamplingMessage(
        role="user", content=mcp_types.TextContent(type="text", text=f"Summarise: {text}")
    )
    if ctx._is_modern_protocol():
        request = mcp_types.CreateMessageRequest(
            params=mcp_types.CreateMessageRequestParams(messages=[message], max_tokens=100)
        )
        return mcp_types.InputRequiredResult(input_requests={"summary": request})
    result = await ctx.session.create_message(messages=[message], max_tokens=100, related_request_id=ctx.request_id)
    return f"summary: {result.content.text}"


@mcp.tool()
def boom(message: str = "it broke") -> str:
    """Fail with a tool error."""
    raise ToolError(message)


@mcp.tool()
def crash() -> str:
    """Kill the server process."""
    os._exit(3)


@mcp.tool()
def delete_everything() -> str:
    """A destructive tool (no annotations): needs approval by default."""
    return "deleted (not really)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--sse", type=int)
    parser.add_argument("--crash-on-start", action="store_true")
    args = parser.parse_args()
    if args.crash_on_start:
        print("toolbox: refusing to start (asked to crash)", file=sys.stderr)
        sys.exit(2)
    if args.http:
        mcp.run(transport="http", host="127.0.0.1", port=args.http, show_banner=False)
    elif args.sse:
        mcp.run(transport="sse", host="127.0.0.1", port=args.sse, show_banner=False)
    else:
        mcp.run(show_banner=False)


if __name__ == "__main__":
    main()
