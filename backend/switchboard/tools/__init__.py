"""MCP servers and their tools: the only package that imports fastmcp.

The names below load on first use, so that `tools.launch` (which starts stdio servers
before the app is built) can be imported without fastmcp and the MCP SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .connection import ServerConnection
    from .models import CallSink, RawArtifact, ServerStatus, ToolInfo, ToolOutcome
    from .naming import qualify
    from .pool import ServerPool
    from .registry import ToolRegistry
    from .results import parse_result

__all__ = [
    "CallSink",
    "RawArtifact",
    "ServerConnection",
    "ServerPool",
    "ServerStatus",
    "ToolInfo",
    "ToolOutcome",
    "ToolRegistry",
    "parse_result",
    "qualify",
]

_HOMES = {
    "ServerConnection": "connection",
    "CallSink": "models",
    "RawArtifact": "models",
    "ServerStatus": "models",
    "ToolInfo": "models",
    "ToolOutcome": "models",
    "qualify": "naming",
    "ServerPool": "pool",
    "ToolRegistry": "registry",
    "parse_result": "results",
}


__getattr__ = lazy_names(__name__, _HOMES)
