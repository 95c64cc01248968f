"""MCP servers and their tools: the only package that imports fastmcp."""

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
