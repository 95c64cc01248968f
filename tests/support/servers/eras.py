"""A FastMCP server for the MCP 2026-07-28 tests, pinned to one era of the protocol.

`--era 2026` refuses the initialize handshake (a 2026-only server), `--era 2025` refuses
`server/discover` (a 2025-only server), `--era any` speaks both. Runs over stdio, or on
127.0.0.1 with `--http PORT`.

Tools:
- `plan_trip`: multi round-trip input (MRTR). Round 1 asks two questions at once (city and
  days), round 2 asks the host's model for a blurb (sampling), then answers. On a 2025
  connection it asks the same through server requests.
- `ask_forever`: asks a question every round and never finishes (a looping server).
- `tag`: a parameter mirrored into an `Mcp-Param-Label` header (`x-mcp-header`); answers
  with the MCP headers the request carried.
- `book`: an input schema with `$ref`/`$defs` (JSON Schema 2020-12).
- `era`: the protocol version of the request.
"""

from __future__ import annotations

import argparse
import json
from typing import Annotated, Any

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.dependencies import get_http_headers
from fastmcp.server.middleware import Middleware
from fastmcp.tools import FunctionTool
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp import MCPError

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
DAYS = {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}


class EraGate(Middleware):
    """Refuses the other era's negotiation, as a server that only knows one would."""

    def __init__(self, era: str) -> None:
        self.era = era

    async def on_discover(self, context: Any, call_next: Any) -> Any:
        if self.era == "2025":
            raise MCPError(code=mcp_types.METHOD_NOT_FOUND, message="Method not found: server/discover")
        return await call_next(context)

    async def on_initialize(self, context: Any, call_next: Any) -> Any:
        if self.era == "2026":
            raise MCPError(
                code=mcp_types.UNSUPPORTED_PROTOCOL_VERSION,
                message="this server speaks 2026-07-28 only",
                data={"supported": ["2026-07-28"]},
            )
        return await call_next(context)


def build(era: str = "any") -> FastMCP:
    mcp = FastMCP("eras", middleware=[EraGate(era)], dereference_schemas=False)

    @mcp.tool(annotations={"readOnlyHint": True})
    async def plan_trip(ctx: Context) -> Any:
        """Plan a trip: asks where and how long (two questions at once), then asks the model for a blurb."""
        if not ctx._is_modern_protocol():
            city = await ctx.session.elicit(
                message="Which city?", requested_schema=CITY, related_request_id=ctx.request_id
            )
            if city.action != "accept":
                return f"no trip: city {city.action}"
            days = await ctx.session.elicit(
                message="How many days?", requested_schema=DAYS, related_request_id=ctx.request_id
            )
            if days.action != "accept":
                return f"no trip: days {days.action}"
            blurb = await ctx.session.create_message(
                messages=[_ask_blurb(city.content["city"])], max_tokens=50, related_request_id=ctx.request_id
            )
            return f"trip to {city.content['city']} for {days.content['days']} days: {blurb.content.text}"
        answers = ctx.input_responses or {}
        state = json.loads(ctx.request_state) if ctx.request_state else {"round": 0}
        if state["round"] == 0:
            asks = {
                "city": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(message="Which city?", requested_schema=CITY)
                ),
                "days": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(message="How many days?", requested_schema=DAYS)
                ),
            }
            return mcp_types.InputRequiredResult(input_requests=asks, request_state=json.dumps({"round": 1}))
        if state["round"] == 1:
            for key in ("city", "days"):
                if answers[key].action != "accept":
                    return f"no trip: {key} {answers[key].action}"
            city, days = answers["city"].content["city"], answers["days"].content["days"]
            ask = mcp_types.CreateMessageRequest(
                params=mcp_types.CreateMessageRequestParams(messages=[_ask_blurb(city)], max_tokens=50)
            )
            return mcp_types.InputRequiredResult(
                input_requests={"blurb": ask}, request_state=json.dumps({"round": 2, "city": city, "days": days})
            )
        return f"trip to {state['city']} for {state['days']} days: {answers['blurb'].content.text}"

    @mcp.tool(annotations={"readOnlyHint": True})
    async def ask_forever(ctx: Context) -> Any:
        """Ask a question, every time, forever."""
        ask = mcp_types.ElicitRequest(params=mcp_types.ElicitRequestFormParams(message="Again?", requested_schema=CITY))
        rounds = int(ctx.request_state or 0) + 1
        return mcp_types.InputRequiredResult(input_requests={"again": ask}, request_state=str(rounds))

    @mcp.tool(annotations={"readOnlyHint": True})
    def tag(label: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Label"})]) -> str:
        """Tag something with a label; answers with the MCP headers the request carried."""
        headers = get_http_headers(include_all=True)
        seen = {k: v for k, v in headers.items() if k.startswith("mcp-") or k.startswith("x-injected")}
        return json.dumps({"label": label, "headers": seen, "header_names": sorted(headers)})

    def book(trip: dict) -> str:
        """Book a trip."""
        return f"booked {trip['traveller']['name']} to {trip['city']}"

    listed = FunctionTool.from_function(book, annotations=ToolAnnotations(readOnlyHint=True))
    mcp.add_tool(listed.model_copy(update={"parameters": BOOK_SCHEMA}))

    @mcp.tool(annotations={"readOnlyHint": True})
    def era(ctx: Context) -> str:
        """The protocol era of this request."""
        return "2026-07-28" if ctx._is_modern_protocol() else "handshake"

    return mcp


# As a JSON Schema 2020-12 generator writes it: shared parts under $defs, used through $ref.
BOOK_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "traveller": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "trip": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "traveller": {"$ref": "#/$defs/traveller"},
                "companions": {"type": "array", "items": {"$ref": "#/$defs/traveller"}},
            },
            "required": ["city", "traveller"],
        },
    },
    "properties": {"trip": {"$ref": "#/$defs/trip"}},
    "required": ["trip"],
}


def _ask_blurb(city: str) -> mcp_types.SamplingMessage:
    return mcp_types.SamplingMessage(
        role="user", content=mcp_types.TextContent(type="text", text=f"Write a blurb about {city}")
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=["2025", "2026", "any"], default="any")
    parser.add_argument("--http", type=int)
    args = parser.parse_args()
    mcp = build(args.era)
    if args.http:
        mcp.run(transport="http", host="127.0.0.1", port=args.http, show_banner=False, stateless_http=True)
    elif args.era == "2025":
        anyio.run(_serve_handshake_stdio, mcp)
    else:
        mcp.run(show_banner=False)


async def _serve_handshake_stdio(mcp: FastMCP) -> None:
    """stdio that serves only the initialize handshake: a stdio connection's first request
    picks its era, so refusing `server/discover` in middleware would leave it modern."""
    from fastmcp.server.context import reset_transport, set_transport
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    token = set_transport("stdio")
    try:
        async with mcp._lifespan_manager():
            lowlevel = mcp._mcp_server
            async with lowlevel.lifespan(lowlevel) as state, stdio_server() as (read, write):
                await serve_loop(
                    lowlevel, read, write, lifespan_state=state, init_options=lowlevel.create_initialization_options()
                )
    finally:
        reset_transport(token)


if __name__ == "__main__":
    main()
