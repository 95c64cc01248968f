"""The tool gateway: for a large catalogue the model is offered three tools
(search, describe, call) instead of every definition.

What the gateway can find, describe or call is exactly the turn's offered set
(the user's groups, the conversation's compliance level, the chat's tool
selection); a call goes through the same CallRunner as a direct call, with the
underlying tool's name and the host's call id, so authorization, approval,
pinning, host-filled arguments and events are those of a direct call.  Search
and describe are answered by the host itself, without an MCP call; they show
as small tool cards (tool_start / tool_result with server "switchboard").
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from cachetools import LRUCache

from ..config.models import LLMConfig, ModelConfig
from ..llm.types import ToolCallRequest
from ..tools import ToolInfo, ToolRegistry
from ..tools.search import ToolIndex
from .calls.host_args import parse_arguments
from .calls.results import frame_for_model
from .calls.runner import ExecutedCall
from .events import ServerEvent, ToolResultEvent, ToolStart

__all__ = [
    "GATEWAY_SERVER",
    "GATEWAY_TOOLS",
    "Gateway",
    "ToolTokenEstimates",
    "estimate_tokens",
    "exposure_report",
    "gateway_wanted",
]

log = logging.getLogger("switchboard.chat")

GATEWAY_SERVER = "switchboard"
SEARCH, DESCRIBE, CALL = "switchboard_search_tools", "switchboard_describe_tool", "switchboard_call_tool"
GATEWAY_TOOLS = (SEARCH, DESCRIBE, CALL)
DEFAULT_LIMIT, MAX_LIMIT = 8, 25
_RESULT_CHARS = 20_000

Emit = Callable[[ServerEvent], Awaitable[None]]
RunDirect = Callable[[ToolCallRequest], Awaitable[ExecutedCall]]

_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": SEARCH,
            "description": (
                "Find tools for a task among the many available here (their definitions are not listed). "
                "Returns the best matches as {name, server, summary}. query 'list' lists the servers with "
                "their tool counts; 'list:SERVER' lists that server's tools. Then call "
                f"{DESCRIBE} for a tool's arguments and {CALL} to run it."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What you want to do, in a few words; or 'list' / 'list:SERVER'.",
                    },
                    "server": {"type": "string", "description": "Only search this server's tools."},
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_LIMIT,
                        "description": f"How many matches at most (default {DEFAULT_LIMIT}).",
                    },
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": DESCRIBE,
            "description": "A tool's full description and input schema (JSON Schema of its arguments).",
            "parameters": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The tool's name as returned by the search."}},
                "required": ["name"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": CALL,
            "description": "Run a tool found with the search, with arguments that fit its input schema.",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name as returned by the search."},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "required": ["name", "arguments"],
            },
        },
    },
]


def estimate_tokens(schemas: list[dict[str, Any]]) -> int:
    """A cheap estimate of what tool definitions cost per model call: JSON length / 4
    (measured against OpenAI's tokenizer in docs/benchmarks.md; close enough to pick a mode)."""
    return len(json.dumps(schemas, separators=(",", ":"))) // 4 if schemas else 0


class ToolTokenEstimates:
    """`estimate_tokens` of a set of offered tools, remembered per (catalogue version, set of
    tools): `auto` asks on every turn, and at 1,000 tools the JSON costs milliseconds.  A
    user's offered set rarely changes between turns, so a turn pays a set lookup."""

    def __init__(self, max_entries: int = 256) -> None:
        self._totals: LRUCache[tuple[int, frozenset[str]], int] = LRUCache(maxsize=max_entries)
        self._sizes: dict[str, tuple[str, int]] = {}  # name -> (definition hash, JSON characters)
        self._sizes_version = -1

    def tokens(self, version: int, tools: Sequence[ToolInfo]) -> int:
        key = (version, frozenset(tool.qualified_name for tool in tools))
        total = self._totals.get(key)
        if total is not None:
            return total
        if version != self._sizes_version:
            self._sizes, self._sizes_version = {}, version
        # JSON of the list = "[" + the schemas joined by "," + "]": the same number as
        # estimate_tokens, from each tool's size, measured once per definition.
        chars = 1 + len(tools) if tools else 0
        for tool in tools:
            size = self._sizes.get(tool.qualified_name)
            if size is None or size[0] != tool.definition_hash:
                size = (tool.definition_hash, len(json.dumps(tool.openai_schema(), separators=(",", ":"))))
                self._sizes[tool.qualified_name] = size
            chars += size[1]
        total = chars // 4
        self._totals[key] = total  # the least recently used set goes when full
        return total


def gateway_wanted(model: ModelConfig, llm: LLMConfig, requested: str | None, tool_tokens: int) -> bool:
    """Whether this model call offers the gateway instead of every tool."""
    if tool_tokens == 0:
        return False
    exposure = requested or model.tool_exposure
    if exposure != "auto":
        return exposure == "gateway"
    threshold = (
        model.gateway_threshold_tokens if model.gateway_threshold_tokens is not None else llm.gateway_threshold_tokens
    )
    return tool_tokens > threshold


class Gateway:
    """One turn's gateway over its offered tools."""

    def __init__(self, registry: ToolRegistry, tools: list[ToolInfo]) -> None:
        self._registry = registry
        self._tools = {tool.qualified_name: tool for tool in tools}
        self._bare: dict[str, list[str]] = {}
        for tool in tools:
            self._bare.setdefault(tool.name, []).append(tool.qualified_name)
        self.described: list[str] = []  # offered directly in the turn's later rounds
        self._index: ToolIndex | None = None

    @staticmethod
    def handles(name: str) -> bool:
        return name in GATEWAY_TOOLS

    def schemas(self) -> list[dict[str, Any]]:
        """The three gateway tools, then the tools described so far in this turn."""
        return [*_SCHEMAS, *(self._tools[name].openai_schema() for name in self.described)]

    def _resolve(self, name: object) -> ToolInfo | None:
        """An offered tool by qualified name, or by the server's own name when that is unique."""
        if not isinstance(name, str):
            return None
        tool = self._tools.get(name)
        if tool is None and len(self._bare.get(name, [])) == 1:
            tool = self._tools[self._bare[name][0]]
        return tool

    async def run(self, call: ToolCallRequest, emit: Emit, run_direct: RunDirect) -> ExecutedCall:
        """Every gateway call ends in a result, whatever goes wrong on the way."""
        started = time.monotonic()
        try:
            return await self._run(call, emit, run_direct, started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error(
                "gateway call failed inside the host",
                exc_info=exc,
                extra={"event": "gateway_crashed", "tool": call.name},
            )
            return self._answer(call, {}, False, "The call failed inside the host; the error was logged.", started)

    async def _run(self, call: ToolCallRequest, emit: Emit, run_direct: RunDirect, started: float) -> ExecutedCall:
        arguments, problem = parse_arguments(call.arguments)
        if arguments is None:
            return self._answer(
                call, {}, False, f"The arguments were not valid JSON ({problem}); send a JSON object.", started
            )
        if call.name == CALL:
            tool = self._resolve(arguments.get("name"))
            if tool is None:
                return self._answer(call, arguments, False, self._unknown(arguments.get("name")), started)
            inner = arguments.get("arguments", {})
            # some models send the arguments as a JSON string
            inner_json = inner if isinstance(inner, str) else json.dumps(inner if inner is not None else {})
            return await run_direct(ToolCallRequest(id=call.id, name=tool.qualified_name, arguments=inner_json))
        await emit(ToolStart(call_id=call.id, tool=call.name, server=GATEWAY_SERVER, arguments=arguments))
        if call.name == SEARCH:
            ok, text = self._search(arguments)
        else:
            ok, text = self._describe(arguments)
        return self._answer(call, arguments, ok, text, started)

    def _search(self, arguments: dict[str, Any]) -> tuple[bool, str]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return False, "Give a 'query': a few words about the task, or 'list' to see the servers."
        limit = arguments.get("limit", DEFAULT_LIMIT)
        limit = max(1, min(limit if isinstance(limit, int) else DEFAULT_LIMIT, MAX_LIMIT))
        server = arguments.get("server") or None
        query = query.strip()
        if query.lower() == "list":
            counts: dict[str, int] = {}
            for tool in self._tools.values():
                counts[tool.server] = counts.get(tool.server, 0) + 1
            servers = [
                {"server": name, "tools": count, "description": self._server_description(name)}
                for name, count in counts.items()
            ]
            return True, json.dumps(servers, ensure_ascii=False)
        if self._index is None:
            self._index = self._registry.index_for(list(self._tools.values()))
        index = self._index
        if query.lower().startswith("list:"):
            server = query[5:].strip()
            hits = [index.hit(name) for name, tool in self._tools.items() if tool.server == server and name in index]
            if not hits:
                return False, f"No server named '{server}' has tools here; query 'list' shows the servers."
        else:
            hits = index.search(
                query, set(self._tools), server=server if isinstance(server, str) else None, limit=limit
            )
        found = [{"name": h.name, "server": h.server, "summary": h.summary} for h in hits]
        if not found:
            return True, "[] (no tool matched; try other words, or query 'list' to see the servers)"
        return True, json.dumps(found, ensure_ascii=False)

    def _describe(self, arguments: dict[str, Any]) -> tuple[bool, str]:
        tool = self._resolve(arguments.get("name"))
        if tool is None:
            return False, self._unknown(arguments.get("name"))
        if tool.qualified_name not in self.described:
            self.described.append(tool.qualified_name)
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        described = {
            "name": tool.qualified_name,
            "server": tool.server,
            "description": tool.description,
            "input_schema": schema,
        }
        if tool.title:
            described["title"] = tool.title
        return True, json.dumps(described, ensure_ascii=False)

    def _server_description(self, server: str) -> str:
        config = self._registry.config_of(server)
        return config.description if config is not None else ""

    @staticmethod
    def _unknown(name: object) -> str:
        return (
            f"There is no tool named {json.dumps(name)} among the tools available in this conversation; "
            f"find one with {SEARCH}."
        )

    @staticmethod
    def _answer(call: ToolCallRequest, arguments: dict[str, Any], ok: bool, text: str, started: float) -> ExecutedCall:
        event = ToolResultEvent(
            call_id=call.id,
            tool=call.name,
            server=GATEWAY_SERVER,
            ok=ok,
            content=text,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        return ExecutedCall(call, event, frame_for_model(call.name, ok, text, _RESULT_CHARS), arguments)


def exposure_report(model: ModelConfig, llm: LLMConfig, tool_tokens: int, tool_count: int) -> dict[str, Any]:
    """What the page shows: would this model get the gateway for these tools (no chat selection)?"""
    threshold = (
        model.gateway_threshold_tokens if model.gateway_threshold_tokens is not None else llm.gateway_threshold_tokens
    )
    return {
        "exposure": model.tool_exposure,
        "threshold_tokens": threshold,
        "tool_tokens": tool_tokens,
        "tools": tool_count,
        "active": gateway_wanted(model, llm, None, tool_tokens),
    }
