"""A connection's state split by owner (tools/servers/connection.py): what it was built with, fixed for its
life, and what the server said on its last connect, replaced by each (re)connect and relist."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import mcp_types
from fastmcp.client.transports import ClientTransport

from .models import ServerStatus
from .servers.launch import EarlyStarts
from .skills import SkillEntry

__all__ = ["ConnectionSetup", "ServerLists"]


@dataclass(frozen=True, slots=True)
class ConnectionSetup:
    project_root: Path
    log_dir: Path
    init_timeout_s: float
    on_status: Callable[[ServerStatus], Awaitable[None] | None] | None
    transport: ClientTransport | None  # given: e.g. an in-memory server (tests); else built from config
    files_origin: str | None
    # A per-user session's own headers/auth (a refused credential ends it, status needs_auth).
    headers: dict[str, str]
    http_auth: httpx2.Auth | None
    early: EarlyStarts | None  # a process started before the app was built, for the first session
    input_rounds: int  # MRTR: input_required rounds answered before giving up
    log_failures: bool  # False where the caller reports the status itself (check-config)


@dataclass(slots=True)
class ServerLists:
    tools: list[mcp_types.Tool] = field(default_factory=list)
    resources: list[mcp_types.Resource] = field(default_factory=list)
    resource_templates: list[mcp_types.ResourceTemplate] = field(default_factory=list)
    prompts: list[mcp_types.Prompt] = field(default_factory=list)
    skills: list[SkillEntry] = field(default_factory=list)  # listed only; no file is read before the model uses one
    instructions: str = ""  # the server's, from its last connect (part of its tools' pins)
    protocol_version: str | None = None  # negotiated on the last connect (kept while reconnecting)
    generation: int = 0  # bumps on every (re)connect, so the registry can refresh
