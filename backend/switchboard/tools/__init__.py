"""MCP servers and their tools: the only package that imports fastmcp.

The names below load on first use, so that `tools.servers.launch` (which starts stdio servers
before the app is built) can be imported without fastmcp and the MCP SDK."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .models import CallSink, RawArtifact, ServerStatus, ToolInfo, ToolOutcome
    from .naming import qualify
    from .registry import ToolRegistry
    from .results import parse_result
    from .servers.connection import ServerConnection
    from .servers.pool import ServerPool

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
    "ServerConnection": "servers.connection",
    "CallSink": "models",
    "RawArtifact": "models",
    "ServerStatus": "models",
    "ToolInfo": "models",
    "ToolOutcome": "models",
    "qualify": "naming",
    "ServerPool": "servers.pool",
    "ToolRegistry": "registry",
    "parse_result": "results",
}


__getattr__ = lazy_names(__name__, _HOMES)
