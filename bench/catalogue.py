"""Catalogue size: tokens of tool definitions the app sends with every model
call, for catalogues of 10, 100, 300 and 1,000 tools, with every definition sent
(`tool_exposure: all`) and through the tool gateway (`gateway`: three tools).

A generated stdio FastMCP server offers N tools with realistic names,
descriptions and argument schemas (typed, described, enums, lists, bounds).
The app (`switchboard serve` in its own process) runs one turn per size
against the HTTP LLM double, which records the request body; the `tools` it
received are counted with litellm's `token_counter` (model gpt-4o: tiktoken's
o200k_base, bundled with litellm, offline; it renders the tools the way
OpenAI does before counting) as tokens(messages + tools) - tokens(messages),
and, for comparison, tiktoken o200k_base over the JSON text of the tools.
The p50 time of a one-round turn (no tool call) shows what the definitions
cost the host per model call.

    uv run python bench/catalogue.py [--sizes 10,100,300] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import tempfile
import time
from pathlib import Path

import _support as S

NOUNS = [
    ("ticket", "support ticket"),
    ("customer", "customer account"),
    ("invoice", "invoice"),
    ("order", "sales order"),
    ("product", "catalogue product"),
    ("shipment", "shipment"),
    ("event", "calendar event"),
    ("email", "email message"),
    ("document", "document"),
    ("folder", "shared folder"),
    ("repository", "code repository"),
    ("pull_request", "pull request"),
    ("issue", "issue"),
    ("build", "CI build"),
    ("deployment", "deployment"),
    ("incident", "incident"),
    ("alert", "monitoring alert"),
    ("metric", "metric series"),
    ("dashboard", "dashboard"),
    ("user", "user account"),
    ("group", "user group"),
    ("project", "project"),
    ("task", "task"),
    ("contract", "contract"),
    ("lead", "sales lead"),
    ("campaign", "marketing campaign"),
    ("report", "report"),
    ("dataset", "dataset"),
    ("query", "saved query"),
    ("note", "note"),
]
VERBS = ["search", "get", "create", "update", "delete", "list", "export", "summarize", "assign", "archive"]
STATUSES = ["open", "in_progress", "blocked", "done", "cancelled"]


def _param(name: str, type_: str, description: str, default: str | None = None, extra: str = "") -> str:
    field = f'Field(description="{description}"{extra})'
    return f"    {name}: Annotated[{type_}, {field}]" + (f" = {default}" if default is not None else "")


REGIONS = ["", "eu", "us", "apac"]  # past 300 tools: the same catalogue again per sales region


def _tool(noun: str, label: str, verb: str, region: str = "") -> str:
    if region:  # "eu_ticket" / "EU support ticket"
        noun, label = f"{region}_{noun}", f"{region.upper()} {label}"
    plural = label + "s"
    ident = _param(f"{noun}_id", "str", f"The {label}'s id, as returned by search_{noun}s or list_{noun}s.")
    params: list[str]
    if verb == "search":
        doc = (
            f"Search {plural} by free text and filters. Returns up to `limit` matches, each with its id, title, "
            f"status and last update time; call get_{noun} for the full record."
        )
        params = [
            _param("query", "str", f"Words to look for in the {label}'s title, body and comments."),
            _param("status", f"Literal{STATUSES!r} | None", "Only return items in this status.", "None"),
            _param("created_after", "str | None", "ISO 8601 date; only items created on or after it.", "None"),
            _param("sort", 'Literal["relevance", "newest", "oldest"]', "Order of the results.", '"relevance"'),
            _param("limit", "int", "How many results to return at most.", "20", ", ge=1, le=100"),
        ]
    elif verb == "get":
        doc = f"Get one {label} with all its fields, its owner and, optionally, its change history."
        params = [ident, _param("include_history", "bool", "Also return the list of past changes.", "False")]
    elif verb == "create":
        doc = (
            f"Create a new {label}. The title is required; everything else is optional and can be set later "
            f"with update_{noun}. Returns the new {label}'s id and its web URL."
        )
        params = [
            _param("title", "str", f"A short title for the {label}.", None, ", min_length=1, max_length=200"),
            _param("description", "str | None", "Longer text, Markdown allowed.", "None"),
            _param("priority", 'Literal["low", "normal", "high", "urgent"]', "How urgent it is.", '"normal"'),
            _param("tags", "list[str]", "Free-form labels used for filtering.", "[]"),
            _param("owner", "str | None", "Email of the person responsible; defaults to the caller.", "None"),
        ]
    elif verb == "update":
        doc = f"Change fields of an existing {label}. Fields left out keep their current values."
        params = [
            ident,
            _param("title", "str | None", "New title.", "None"),
            _param("status", f"Literal{STATUSES!r} | None", "New status.", "None"),
            _param("tags", "list[str] | None", "Replaces the whole tag list when given.", "None"),
        ]
    elif verb == "delete":
        doc = f"Delete a {label} permanently. This cannot be undone; prefer archive_{noun} when in doubt."
        params = [ident, _param("reason", "str | None", "Why it is deleted, kept in the audit log.", "None")]
    elif verb == "list":
        doc = f"List {plural}, newest first, one page at a time."
        params = [
            _param("page", "int", "Page number, starting at 1.", "1", ", ge=1"),
            _param("page_size", "int", "Items per page.", "50", ", ge=1, le=500"),
            _param("status", f"Literal{STATUSES!r} | None", "Only list items in this status.", "None"),
        ]
    elif verb == "export":
        doc = (
            f"Export {plural} to a file. Returns a download link that stays valid for one hour; large exports "
            "are produced in the background and may take a minute."
        )
        params = [
            _param(f"{noun}_ids", "list[str]", "Which items to export; at most 1,000.", None, ", max_length=1000"),
            _param("format", 'Literal["csv", "json", "xlsx"]', "File format.", '"csv"'),
            _param("fields", "list[str] | None", "Columns to include; all when left out.", "None"),
        ]
    elif verb == "summarize":
        doc = f"Summarize a {label} and its discussion in a few sentences, for a quick status update."
        params = [ident, _param("max_words", "int", "Length limit of the summary.", "120", ", ge=20, le=1000")]
    elif verb == "assign":
        doc = f"Assign a {label} to a person, optionally notifying them by email."
        params = [
            ident,
            _param("assignee", "str", "Email of the new assignee."),
            _param("notify", "bool", "Send the assignee an email.", "True"),
        ]
    else:
        doc = f"Archive a {label}: it disappears from lists and searches but can be restored."
        params = [ident, _param("include_children", "bool", "Also archive linked items.", "False")]
    read_only = verb in ("search", "get", "list", "export", "summarize")
    annotations = '{"readOnlyHint": True}' if read_only else ('{"destructiveHint": True}' if verb == "delete" else "{}")
    name = f"{verb}_{noun}s" if verb in ("search", "list", "export") else f"{verb}_{noun}"
    body = ",\n".join(params)
    return f'@mcp.tool(annotations={annotations})\ndef {name}(\n{body},\n) -> str:\n    """{doc}"""\n    return "ok"\n'


def server_source(n: int) -> str:
    """A FastMCP server script with the first `n` of 1,200 tools (nouns x verbs, mixed; then per region)."""
    tools = []
    for k in range(min(n, len(NOUNS) * len(VERBS) * len(REGIONS))):
        noun, label = NOUNS[k % len(NOUNS)]
        verb = VERBS[(k // len(NOUNS) + k) % len(VERBS)]  # every (noun, verb) pair once per region
        tools.append(_tool(noun, label, verb, REGIONS[k // (len(NOUNS) * len(VERBS))]))
    head = (
        "from typing import Annotated, Literal\n\nfrom fastmcp import FastMCP\nfrom pydantic import Field\n\n"
        'mcp = FastMCP("catalogue")\n\n\n'
    )
    return head + "\n\n".join(tools) + '\n\nif __name__ == "__main__":\n    mcp.run(show_banner=False)\n'


async def _turns(ws_url: str, count: int, exposure: str = "all") -> list[float]:
    import websockets

    async with websockets.connect(ws_url, max_size=2**24) as ws:
        await ws.recv()
        out = []
        for _ in range(count):
            seconds, events = await S.ws_turn(ws, "Hello", conversation_id=secrets.token_hex(6), tool_exposure=exposure)
            if events[-1].get("finish_reason") != "stop":
                raise RuntimeError(f"turn failed: {events[-3:]}")
            out.append(seconds * 1000)
        return out


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10,100,300,1000")
    p.add_argument("--turns", type=int, default=20, help="timed one-round turns per size")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    import litellm

    # tiktoken's encodings ship inside litellm: count offline, never download.
    os.environ.setdefault(
        "TIKTOKEN_CACHE_DIR", str(Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers")
    )
    import tiktoken

    from tests.support.llm_double import LLMDouble, TextReply

    encoding = tiktoken.get_encoding("o200k_base")
    rows, data = [], {"sizes": {}}
    with LLMDouble(default=TextReply("Hello.", chunks=1)) as double:
        for n in [int(x) for x in args.sizes.split(",")]:
            with tempfile.TemporaryDirectory(prefix="bench-catalogue-") as tmp:
                folder = Path(tmp)
                script = folder / "catalogue_server.py"
                script.write_text(server_source(n))
                servers = {"cat": {"command": "python", "args": [str(script)], "approval": "never"}}
                env = S.write_site(folder, servers, double.base_url)
                with S.app_process(folder, env) as app:
                    double.reset()
                    asyncio.run(_turns(app.ws_url, 3))  # warm up
                    request = double.requests[-1]
                    latencies = asyncio.run(_turns(app.ws_url, args.turns))
                    asyncio.run(_turns(app.ws_url, 1, "gateway"))
                    gateway_request = double.requests[-1]
            tools = request.get("tools") or []
            messages = request["messages"]
            gateway_tools = gateway_request.get("tools") or []
            gateway_tokens = litellm.token_counter(
                model="gpt-4o", messages=gateway_request["messages"], tools=gateway_tools
            ) - litellm.token_counter(model="gpt-4o", messages=gateway_request["messages"])
            with_tools = litellm.token_counter(model="gpt-4o", messages=messages, tools=tools)
            without = litellm.token_counter(model="gpt-4o", messages=messages)
            tool_tokens = with_tools - without
            json_text = json.dumps(tools, separators=(",", ":"))
            json_tokens = len(encoding.encode(json_text))
            body_bytes = len(json.dumps(request).encode())
            entry = {
                "tools_sent": len(tools),
                "tool_tokens": tool_tokens,
                "tokens_per_tool": tool_tokens / max(1, len(tools)),
                "json_tokens_o200k": json_tokens,
                "tools_json_bytes": len(json_text),
                "request_body_bytes": body_bytes,
                "turn_p50_ms": S.percentile(latencies, 50),
                "turn_p99_ms": S.percentile(latencies, 99),
                "gateway_tools_sent": len(gateway_tools),
                "gateway_tool_tokens": gateway_tokens,
                "estimate_json_div_4": len(json_text) // 4,
            }
            data["sizes"][n] = entry
            rows.append(
                [
                    n,
                    len(tools),
                    tool_tokens,
                    entry["tokens_per_tool"],
                    json_tokens,
                    len(json_text) // 4,
                    body_bytes,
                    entry["turn_p50_ms"],
                    len(gateway_tools),
                    gateway_tokens,
                    f"1/{tool_tokens / max(1, gateway_tokens):.0f}",
                ]
            )
            print(f"  {n} tools done", flush=True)
    print("\nCatalogue size: tool definitions sent with every model call\n")
    S.print_table(
        [
            "tools",
            "sent",
            "tokens (token_counter)",
            "tokens/tool",
            "tokens (o200k over JSON)",
            "estimate (JSON chars/4)",
            "request bytes",
            "1-round turn p50 ms",
            "gateway: sent",
            "gateway: tokens",
            "gateway / all",
        ],
        rows,
    )
    print(
        "\ntokens (token_counter) = litellm.token_counter(model='gpt-4o', messages, tools) minus the same without tools"
    )
    S.report("catalogue", data, args, started, load)


if __name__ == "__main__":
    main()
