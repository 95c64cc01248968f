"""MCP servers and their tools: the only package that imports fastmcp.

The names below load on first use, so that `tools.servers.launch` (which starts stdio servers
before the app is built) can be imported without fastmcp and the MCP SDK."""

from __future__ import annotations

import os
from importlib import import_module
from typing import TYPE_CHECKING, Any

# fastmcp's OAuth token stores (py-key-value) have beartype check their own types at run time,
# and instrumenting their modules on import costs a tenth of a second of every start. They are
# the library's own checks, warnings only; set the variable to "false" to have them.
os.environ.setdefault("PY_KEY_VALUE_DISABLE_BEARTYPE", "true")

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
