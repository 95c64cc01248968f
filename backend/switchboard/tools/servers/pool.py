"""All configured servers: start them concurrently and keep the registry in step with their
connections. Calls, resources and prompts are in pool_calls.py, per-user credentials in
pool_users.py."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fastmcp.client.transports import FastMCPTransport

from ...config.loader import McpConfig
from ...config.models import ServerConfig
from ..apps import AppResources
from ..catalogue_watch import CatalogueWatch
from ..models import ServerStatus
from ..oauth.flow import SignIns
from ..oauth.vault import CredentialVault, MemoryVault
from ..pins import ToolPins
from ..registry import ToolRegistry
from ..trust import Trust
from .calls import CallBounds, PoolTraffic
from .connection import ServerConnection
from .launch import EarlyStarts
from .user_sessions import UserSessions
from .users import PerUserServers

__all__ = ["Readiness", "ServerPool"]

log = logging.getLogger("switchboard.tools")


class Peers(Protocol):
    """The other app processes (the host passes its relay, chat/relay/seam.py)."""

    def credentials_changed(self, server: str, user: str) -> None: ...

    def trust_changed(self, server: str) -> None: ...


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
        # needs_auth: waiting for users to sign in is not a fault of the host
        return [s.name for s in self.servers if s.name in self.required and s.status not in ("ready", "needs_auth")]

    @property
    def ready(self) -> bool:
        return not self.starting and not self.required_not_ready


@dataclass(frozen=True, slots=True)
class _Wiring:
    """What the pool is built with beside its configuration, fixed for its life."""

    in_memory: dict[str, Any]  # server name -> a FastMCP server object to talk to without a process (tests)
    early: EarlyStarts | None  # stdio processes started before the app was built (launch.py), adopted by connections
    on_status: Callable[[ServerStatus], None] | None  # told of every server's status change


class ServerPool(PerUserServers, PoolTraffic):
    """Every configured server's connection (or per-user sessions), the registry of their tools,
    start, restart, reload and readiness; per-user credentials (pool_users.py) and the calls,
    resources and prompts (pool_calls.py) are the other two parts."""

    def __init__(
        self,
        mcp: McpConfig,
        *,
        project_root: Path,
        log_dir: Path,
        init_timeout_s: float = 60.0,
        input_rounds: int = 10,
        max_artifact_bytes: int = 25 * 1024 * 1024,
        concurrency_per_server: int = 4,
        on_status: Callable[[ServerStatus], None] | None = None,
        in_memory: Mapping[str, Any] | None = None,
        files_origin: str | None = None,
        vault: CredentialVault | None = None,
        client_metadata_url: str | None = None,
        early: EarlyStarts | None = None,
        dev_auth: bool = False,
        app_cache_s: float = 60.0,
        peers: Peers | None = None,
    ) -> None:
        self.vault: CredentialVault = vault or MemoryVault()  # users' own credentials (user_token, OAuth)
        # (server, user): a user's credential changed here; the other app processes drop that
        # user's session too, so that none goes on with the old one (the host passes the relay).
        self.credentials_changed: Callable[[str, str], None] = (
            peers.credentials_changed if peers else lambda server, user: None
        )
        base = (files_origin or "http://127.0.0.1:8000").rstrip("/")
        # dev_auth: the app runs in dev auth mode (see SignIns.policy for what that allows)
        self.sign_ins = SignIns(
            self.vault, redirect_uri=f"{base}/oauth/callback", client_metadata_url=client_metadata_url, dev=dev_auth
        )
        self._wiring = _Wiring(dict(in_memory or {}), early, on_status)
        self._mcp = mcp
        self._connection_args = {
            "project_root": project_root,
            "log_dir": log_dir,
            "init_timeout_s": init_timeout_s,
            "files_origin": files_origin,
            "input_rounds": input_rounds,
        }
        self._bounds = CallBounds(concurrency_per_server, max_artifact_bytes)
        self.pins = ToolPins(on_change=self._rebuild)
        self.apps = AppResources(ttl_s=app_cache_s)  # MCP Apps' ui:// resources read lately
        self.watch = CatalogueWatch()  # the pages hear of every change of a server's lists or status
        self.trust = Trust(  # which tools an administrator approved
            on_change=self._trust_changed, shared=peers.trust_changed if peers else None
        )
        self.registry = ToolRegistry(self.pins, self.trust)
        self.connections: dict[str, ServerConnection | UserSessions] = {
            name: self._connection(name, c) for name, c in mcp.servers.items()
        }
        self._limits = {name: asyncio.Semaphore(concurrency_per_server) for name in self.connections}
        self._settled_said = False  # the "every server has left starting" summary is logged once per (re)start

    def _connection(self, name: str, config: ServerConfig) -> ServerConnection | UserSessions:
        server = self._wiring.in_memory.get(name)
        transport = FastMCPTransport(server) if server is not None else None
        self.sign_ins.warn_without_issuer(name, config)
        if config.sessions_per_user:
            return self._user_sessions(name, config, transport)
        auth = config.auth
        machine = self.sign_ins.machine_auth(name, config) if auth is not None and auth.type == "oauth" else None
        return ServerConnection(
            name,
            config,
            on_status=self._on_status,
            transport=transport,
            http_auth=machine,
            early=self._wiring.early,
            **self._connection_args,
        )

    async def _on_status(self, status: ServerStatus) -> None:
        self.apps.forget(status.name)
        self._rebuild()
        self.watch.changed(status.name)
        if self._wiring.on_status is not None:
            self._wiring.on_status(status)
        self._say_when_settled()

    def _say_when_settled(self) -> None:
        readiness = self.readiness()
        if self._settled_said or readiness.starting:
            return
        self._settled_said = True
        failed = [s.name for s in readiness.servers if s.status == "failed"]
        needs_auth = [s.name for s in readiness.servers if s.status == "needs_auth"]
        log.info(
            "every server has left starting",
            extra={
                "event": "servers_settled",
                "total": len(readiness.servers),
                "ready": readiness.count("ready"),
                "failed": failed,
                "needs_auth": needs_auth,
                "required_not_ready": readiness.required_not_ready,
            },
        )

    def readiness(self) -> Readiness:
        required = {name for name, conn in self.connections.items() if conn.config.required}
        required |= self._mcp.required_errors
        return Readiness([s for s in self.statuses() if s.status != "disabled"], required)

    def _trust_changed(self, server: str) -> None:
        self._rebuild()
        self.watch.changed(server)

    def _rebuild(self) -> None:
        per_user = {
            name: {user: listing.tools for user, listing in conn.listings().items()}
            for name, conn in self.connections.items()
            if isinstance(conn, UserSessions)
        }
        self.registry.rebuild(
            (
                (name, conn.config, conn.tools if conn.status.status == "ready" else [])
                for name, conn in self.connections.items()
            ),
            per_user,
            {name: conn.instructions for name, conn in self.connections.items()},
        )

    @property
    def mcp(self) -> McpConfig:
        """The configuration the servers run with (the files' and the admin console's)."""
        return self._mcp

    def prepare(self, mcp: McpConfig) -> None:
        """Before `start`: run with `mcp` instead (the files' servers and the console's)."""
        self.connections = {
            name: (current if (current := self.connections.get(name)) and current.config == config else None)
            or self._connection(name, config)
            for name, config in mcp.servers.items()
        }
        self._limits = {
            name: self._limits.get(name) or asyncio.Semaphore(self._bounds.concurrency) for name in mcp.servers
        }
        self._mcp = mcp
        self._rebuild()

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
        self.watch.changed(name)
        fresh.start()

    async def stop(self) -> None:
        await asyncio.gather(*(conn.stop() for conn in self.connections.values()))
        if self._wiring.early is not None:
            await self._wiring.early.close()  # processes started early that no connection adopted

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
            self._limits.setdefault(name, asyncio.Semaphore(self._bounds.concurrency))
            old[name].start()
        for name, error in mcp.errors.items():
            report.setdefault(name, f"not started: {error}")
        self._mcp = mcp
        self._settled_said = False
        self._rebuild()
        for name, what in report.items():
            if what != "unchanged":
                self.watch.changed(name)
        self._say_when_settled()
        return report

    def per_user_configs(self) -> list[tuple[str, ServerConfig]]:
        """The servers with one session per user."""
        return [(name, conn.config) for name, conn in self.connections.items() if isinstance(conn, UserSessions)]

    def server_config(self, server: str) -> ServerConfig | None:
        conn = self.connections.get(server)
        return conn.config if conn is not None else None

    def statuses(self) -> list[ServerStatus]:
        out = [conn.status for conn in self.connections.values()]
        for name, error in self._mcp.errors.items():
            out.append(ServerStatus(name=name, status="failed", transport="unknown", reason=f"config error: {error}"))
        return out

    def description(self, server: str) -> str:
        conn = self.connections.get(server)
        return conn.config.description if conn else ""
