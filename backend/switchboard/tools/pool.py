"""All configured servers: start them concurrently, keep the registry in
step with their connections, and run tool calls (bounded per server)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastmcp.client.transports import FastMCPTransport
from mcp import MCPError

from ..config.loader import McpConfig
from ..config.models import ServerConfig
from ..errors import ToolError
from .connection import ServerConnection
from .models import CallSink, RawArtifact, ServerStatus, ToolInfo, ToolOutcome
from .pins import ToolPins
from .registry import ToolRegistry
from .results import add_resource_contents, finish_text, parse_result

__all__ = ["Readiness", "ServerPool"]

log = logging.getLogger("switchboard.tools")

MAX_RESOURCE_LINKS = 10


@dataclass
class Readiness:
    """Whether the pool is ready to serve: every enabled server has left `starting`, and
    every server marked `required` is `ready`.  A failed optional server does not hold it up."""

    servers: list[ServerStatus]  # every enabled server (config-refused entries count as failed)
    required: set[str] = field(default_factory=set)

    def count(self, status: str) -> int:
        return sum(1 for s in self.servers if s.status == status)

    @property
    def starting(self) -> list[str]:
        return [s.name for s in self.servers if s.status == "starting"]

    @property
    def required_not_ready(self) -> list[str]:
        return [s.name for s in self.servers if s.name in self.required and s.status != "ready"]

    @property
    def ready(self) -> bool:
        return not self.starting and not self.required_not_ready


class ServerPool:
    def __init__(
        self,
        mcp: McpConfig,
        *,
        project_root: Path,
        log_dir: Path,
        init_timeout_s: float = 60.0,
        max_artifact_bytes: int = 25 * 1024 * 1024,
        concurrency_per_server: int = 4,
        on_status: Callable[[ServerStatus], None] | None = None,
        in_memory: Mapping[str, Any] | None = None,
        files_origin: str | None = None,
    ) -> None:
        # in_memory: server name -> a FastMCP server object to talk to without a process (tests).
        self._in_memory = dict(in_memory or {})
        self._mcp = mcp
        self._connection_args = {"project_root": project_root, "log_dir": log_dir, "init_timeout_s": init_timeout_s,
                                 "files_origin": files_origin}  # fmt: skip
        self._concurrency = concurrency_per_server
        self._max_artifact_bytes = max_artifact_bytes
        self._on_status_cb = on_status
        self.pins = ToolPins(on_change=self._rebuild)
        self.registry = ToolRegistry(self.pins)
        self.connections: dict[str, ServerConnection] = {name: self._connection(name, c) for name, c in mcp.servers.items()}
        self._limits = {name: asyncio.Semaphore(concurrency_per_server) for name in self.connections}
        self._settled_said = False  # the "every server has left starting" summary is logged once per (re)start

    def _connection(self, name: str, config: ServerConfig) -> ServerConnection:
        server = self._in_memory.get(name)
        transport = FastMCPTransport(server) if server is not None else None
        return ServerConnection(name, config, on_status=self._on_status, transport=transport, **self._connection_args)  # type: ignore[arg-type]

    async def _on_status(self, status: ServerStatus) -> None:
        self._rebuild()
        if self._on_status_cb is not None:
            self._on_status_cb(status)
        self._say_when_settled()

    def _say_when_settled(self) -> None:
        readiness = self.readiness()
        if self._settled_said or readiness.starting:
            return
        self._settled_said = True
        failed = [s.name for s in readiness.servers if s.status == "failed"]
        log.info(
            "every server has left starting",
            extra={"event": "servers_settled", "total": len(readiness.servers), "ready": readiness.count("ready"),
                   "failed": failed, "required_not_ready": readiness.required_not_ready},  # fmt: skip
        )

    def readiness(self) -> Readiness:
        required = {name for name, conn in self.connections.items() if conn.config.required}
        required |= self._mcp.required_errors
        return Readiness([s for s in self.statuses() if s.status != "disabled"], required)

    def _rebuild(self) -> None:
        self.registry.rebuild(
            (name, conn.config, conn.tools if conn.status.status == "ready" else [])
            for name, conn in self.connections.items()
        )

    def start(self) -> None:
        """Start every enabled server in the background; returns at once."""
        for conn in self.connections.values():
            conn.start()
        if not any(conn.config.enabled for conn in self.connections.values()):
            self._say_when_settled()

    async def restart(self, name: str) -> None:
        """Stop one server's connection (and its process) and start it afresh with the same
        config, e.g. after its cause of failure was fixed.  Raises KeyError for an unknown server."""
        old = self.connections[name]
        await old.stop()
        fresh = self.connections[name] = self._connection(name, old.config)
        self._settled_said = False
        log.info("server %s restarting", name, extra={"event": "server_restart", "server": name})
        self._rebuild()
        fresh.start()

    async def stop(self) -> None:
        await asyncio.gather(*(conn.stop() for conn in self.connections.values()))

    async def wait_settled(self, timeout_s: float) -> None:
        """Wait until no enabled server is still `starting` (or the timeout)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(s.status != "starting" for s in self.statuses()):
                return
            await asyncio.sleep(0.05)

    async def reload(self, mcp: McpConfig) -> dict[str, str]:
        """Apply a new mcp.json: new servers start, removed ones stop, changed
        ones restart, untouched ones keep their sessions.  Returns what
        happened to each server."""
        report: dict[str, str] = {}
        old = self.connections
        for name in [n for n in old if n not in mcp.servers]:
            await old.pop(name).stop()
            report[name] = "stopped (error in its new entry)" if name in mcp.errors else "removed"
        for name, config in mcp.servers.items():
            current = old.get(name)
            if current is not None and current.config == config:
                report[name] = "unchanged"
                continue
            if current is not None:
                await current.stop()
            report[name] = "restarted" if current is not None else "added"
            old[name] = self._connection(name, config)
            self._limits.setdefault(name, asyncio.Semaphore(self._concurrency))
            old[name].start()
        for name, error in mcp.errors.items():
            report.setdefault(name, f"not started: {error}")
        self._mcp = mcp
        self._settled_said = False
        self._rebuild()
        self._say_when_settled()
        return report

    def resources_of(self, server: str) -> tuple[list[Any], list[Any], list[Any]]:
        conn = self.connections.get(server)
        if conn is None or conn.status.status != "ready":
            return [], [], []
        return conn.resources, conn.resource_templates, conn.prompts

    def server_config(self, server: str) -> ServerConfig | None:
        conn = self.connections.get(server)
        return conn.config if conn is not None else None

    async def read_resource(self, server: str, uri: str) -> list[RawArtifact]:
        """A resource's contents as raw files (text or bytes)."""
        conn = self.connections.get(server)
        if conn is None:
            raise ToolError(f"there is no server named '{server}'")
        outcome = ToolOutcome(ok=True, text="")
        add_resource_contents(outcome, uri.rsplit("/", 1)[-1] or "resource", await conn.read_resource(uri),
                              self._max_artifact_bytes)  # fmt: skip
        if outcome.notes:
            raise ToolError("; ".join(outcome.notes))
        return outcome.artifacts

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str]) -> list[tuple[str, str]]:
        conn = self.connections.get(server)
        if conn is None:
            raise ToolError(f"there is no server named '{server}'")
        return await conn.get_prompt(name, arguments)

    def statuses(self) -> list[ServerStatus]:
        out = [conn.status for conn in self.connections.values()]
        for name, error in self._mcp.errors.items():
            out.append(ServerStatus(name=name, status="failed", transport="unknown", reason=f"config error: {error}"))
        return out

    def description(self, server: str) -> str:
        conn = self.connections.get(server)
        return conn.config.description if conn else ""

    async def call(self, tool: ToolInfo, arguments: dict[str, Any], sink: CallSink) -> ToolOutcome:
        """Run one call.  Raises the ToolError tree; the caller turns it into data."""
        conn = self.connections[tool.server]
        started = time.monotonic()
        async with self._limits[tool.server]:
            result = await conn.call(tool.name, arguments, sink)
        outcome = parse_result(result, max_artifact_bytes=self._max_artifact_bytes)
        for name, uri in outcome.resource_links[:MAX_RESOURCE_LINKS]:
            try:
                contents = await conn.read_resource(uri)
            except (MCPError, ToolError) as exc:
                outcome.notes.append(f"could not read linked resource {uri}: {getattr(exc, 'message', exc)}")
                continue
            add_resource_contents(outcome, name, contents, self._max_artifact_bytes)
        for name, uri in outcome.resource_links[MAX_RESOURCE_LINKS:]:
            outcome.notes.append(f"linked resource {name} <{uri}> not fetched (more than {MAX_RESOURCE_LINKS} links)")
        finish_text(outcome)
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        return outcome
