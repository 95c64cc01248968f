"""All configured servers: start them concurrently, keep the registry in
step with their connections, and run tool calls (bounded per server)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit
from typing import Any

from fastmcp.client.transports import FastMCPTransport
from mcp import MCPError

from ..config.loader import McpConfig
from ..config.models import ServerConfig
from ..errors import NeedsAuth, ServerUnavailable, ToolError
from ..telemetry import mcp_span
from .apps import AppResource, AppResources, parse_app_resource
from .catalogue_watch import CatalogueWatch
from .connection import ServerConnection
from .launch import EarlyStarts
from .models import CallSink, RawArtifact, ServerStatus, ToolInfo, ToolOutcome
from .pins import ToolPins
from .registry import ToolRegistry
from .results import add_resource_contents, finish_text, parse_result
from .skills import SkillEntry, bytes_of, text_of, verify_skill_file
from .tasks import TaskChannel, TaskHandle
from .oauth import SignIns
from .user_sessions import UserSessions
from .vault import CredentialVault, MemoryVault

__all__ = ["Readiness", "ServerPool"]

log = logging.getLogger("switchboard.tools")

MAX_RESOURCE_LINKS = 10
TOKEN_CHECK_S = 15.0  # how long a newly entered token is tried before the answer goes back


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


class ServerPool:
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
    ) -> None:
        self.vault: CredentialVault = vault or MemoryVault()  # users' own credentials (user_token, OAuth)
        # (server, user): a user's credential changed here; the other app processes drop that
        # user's session too, so that none goes on with the old one (the host wires it to the relay).
        self.credentials_changed: Callable[[str, str], None] = lambda server, user: None
        base = (files_origin or "http://127.0.0.1:8000").rstrip("/")
        # dev_auth: the app runs in dev auth mode (see SignIns.policy for what that allows)
        self.sign_ins = SignIns(self.vault, redirect_uri=f"{base}/oauth/callback", client_metadata_url=client_metadata_url,
                                dev=dev_auth)  # fmt: skip
        # in_memory: server name -> a FastMCP server object to talk to without a process (tests).
        self._in_memory = dict(in_memory or {})
        self._mcp = mcp
        # early: stdio processes started before the app was built (launch.py), adopted by their connections.
        self._early = early
        self._connection_args = {"project_root": project_root, "log_dir": log_dir, "init_timeout_s": init_timeout_s,
                                 "files_origin": files_origin, "input_rounds": input_rounds}  # fmt: skip
        self._concurrency = concurrency_per_server
        self._max_artifact_bytes = max_artifact_bytes
        self._on_status_cb = on_status
        self.pins = ToolPins(on_change=self._rebuild)
        self.apps = AppResources(ttl_s=app_cache_s)  # MCP Apps' ui:// resources read lately
        self.watch = CatalogueWatch()  # the pages hear of every change of a server's lists or status
        self.registry = ToolRegistry(self.pins)
        self.connections: dict[str, ServerConnection | UserSessions] = {
            name: self._connection(name, c) for name, c in mcp.servers.items()
        }
        self._limits = {name: asyncio.Semaphore(concurrency_per_server) for name in self.connections}
        self._settled_said = False  # the "every server has left starting" summary is logged once per (re)start

    def _connection(self, name: str, config: ServerConfig) -> ServerConnection | UserSessions:
        server = self._in_memory.get(name)
        transport = FastMCPTransport(server) if server is not None else None
        self.sign_ins.warn_without_issuer(name, config)
        if config.sessions_per_user:
            return self._user_sessions(name, config, transport)
        auth = config.auth
        machine = self.sign_ins.machine_auth(name, config) if auth is not None and auth.type == "oauth" else None
        return ServerConnection(name, config, on_status=self._on_status, transport=transport, http_auth=machine,
                                early=self._early,
                                **self._connection_args)  # type: ignore[arg-type]  # fmt: skip

    def _user_sessions(self, name: str, config: ServerConfig, transport: Any) -> UserSessions:
        async def changed(user: str) -> None:  # this user's listing changed
            self.apps.forget(name)
            self._rebuild()
            self.watch.changed(name)

        def make(user: str, headers: dict[str, str], auth: Any) -> ServerConnection:
            async def on_status(status: ServerStatus) -> None:
                await group._on_status(conn)

            conn = ServerConnection(name, config, on_status=on_status, transport=transport, user=user,
                                    headers=headers, http_auth=auth, **self._connection_args)  # type: ignore[arg-type]  # fmt: skip
            return conn

        async def credential(user: str) -> tuple[dict[str, str], Any]:
            return await self._credential(name, config, user)

        group = UserSessions(name, config, credential=credential, make=make, on_change=changed,
                             init_timeout_s=float(self._connection_args["init_timeout_s"] or 60))  # type: ignore[arg-type]  # fmt: skip
        return group

    async def _credential(self, name: str, config: ServerConfig, user: str) -> tuple[dict[str, str], Any]:
        """The headers (and httpx auth) of one user's session on a per-user server."""
        auth = config.auth
        if auth is None:
            return {}, None
        if auth.type == "user_token":
            token = await self.vault.get(name, user, "token")
            if not token:
                raise NeedsAuth(f"server '{name}' needs your own token: open the tools panel, press Connect "
                                f"next to '{name}' and enter it, then try again")  # fmt: skip
            return {auth.header: auth.format.format(token=token)}, None
        if await self.vault.get(name, user, "oauth_tokens") is None:
            raise NeedsAuth(f"server '{name}' needs you to sign in first: press Connect next to '{name}' in the "
                            "tools panel, then try again")  # fmt: skip
        return {}, self.sign_ins.session_auth(name, config, user)

    async def begin_sign_in(self, name: str, user: str) -> str:
        """The authorization server's URL where this user signs in to the server."""
        return await self.sign_ins.begin(name, self._per_user(name).config, user)

    async def finish_sign_in(self, user: str, *, state: str, code: str, error: str = "", iss: str | None = None) -> str:
        """Complete a sign-in from the callback; the user's session reopens with the new tokens."""
        name = await self.sign_ins.finish(user, state=state, code=code, error=error, iss=iss,
                                          config_of=lambda server: self._per_user(server).config)  # fmt: skip
        group = self._per_user(name)
        await group.close_user(user)
        self.credentials_changed(name, user)
        await group.open(user)
        return name

    # -- users' own credentials ---------------------------------------------------------

    def _per_user(self, name: str) -> UserSessions:
        group = self.connections.get(name)
        if not isinstance(group, UserSessions):
            raise ToolError(f"server '{name}' does not take a user's own credential")
        return group

    async def connected(self, name: str, user: str) -> bool:
        """Whether this user has given the server their credential (or it needs none)."""
        config = self._per_user(name).config
        if config.auth is None:
            return True
        kind = "token" if config.auth.type == "user_token" else "oauth_tokens"
        return await self.vault.get(name, user, kind) is not None

    async def user_status(self, name: str, user: str) -> ServerStatus:
        """The server as this user sees it (per-user servers); the shared status otherwise."""
        conn = self.connections[name]
        if not isinstance(conn, UserSessions):
            return conn.status
        scopes = await self.sign_ins.step_up_wanted(name, user)
        if scopes is not None:  # a call was refused for want of scopes: not a failure, a sign-in to do
            return ServerStatus(name, "needs_auth", conn.status.transport,
                                reason=f"needs more permissions ({scopes}): press Connect to allow them")  # fmt: skip
        session = conn.session_of(user)
        if session is not None and session.status.status != "disabled":
            return session.status
        base = conn.status
        if conn.config.user_credential and not await self.connected(name, user):
            return ServerStatus(name, "needs_auth", base.transport, reason="connect your account to use this server")
        listing = conn.listing_of(user)
        return ServerStatus(name, "ready", base.transport, tool_count=len(listing.tools) if listing else 0,
                            protocol_version=base.protocol_version)

    async def open_for_user(self, names: list[str], user: str, wait_s: float) -> None:
        """Start this user's sessions of these per-user servers where they have a credential but
        no listing yet (after a restart, say), and wait up to `wait_s` for them to list their tools,
        so that a turn can offer them.  Never from a GET: listing is a side effect on the server."""
        opened = []
        for name in names:
            conn = self.connections.get(name)
            if not isinstance(conn, UserSessions) or not conn.config.enabled or conn.listing_of(user) is not None:
                continue
            if conn.session_of(user) is None and conn.config.user_credential and not await self.connected(name, user):
                continue
            try:
                opened.append(await conn.open(user))
            except (NeedsAuth, ServerUnavailable):
                continue
        deadline = time.monotonic() + wait_s
        while any(c.status.status == "starting" for c in opened) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    async def set_user_token(self, name: str, user: str, token: str) -> str | None:
        """Keep the user's token and try it: None when it works (or the server is down), else why
        the server refused it (the token is then forgotten)."""
        group = self._per_user(name)
        if group.config.auth is None or group.config.auth.type != "user_token":
            raise ToolError(f"server '{name}' does not take a user-entered token")
        await self.vault.put(name, user, "token", token)
        await group.close_user(user)  # the next use opens a session with the new token
        self.credentials_changed(name, user)
        await group.open(user)
        try:
            async with asyncio.timeout(TOKEN_CHECK_S):
                await group.session_for(user)
        except NeedsAuth:
            status = group.session_of(user)
            await self.disconnect(name, user)  # a refused token is not kept: the user is not connected
            return status.status.reason if status is not None and status.status.reason else "the server refused it"
        except (ServerUnavailable, TimeoutError):
            pass  # the server's trouble, not the token's: it is kept, and the status says what is wrong
        return None

    async def disconnect(self, name: str, user: str) -> None:
        """Forget this user's credential for the server and close their session."""
        group = self._per_user(name)
        await self.vault.forget(name, user)
        await group.forget_user(user)
        self.credentials_changed(name, user)

    async def credentials_changed_elsewhere(self, name: str, user: str) -> None:
        """Another app process changed this user's credential for the server: their session here
        closes, and the next use opens one with what the vault holds now."""
        group = self.connections.get(name)
        if isinstance(group, UserSessions):
            await group.close_user(user)

    async def _on_status(self, status: ServerStatus) -> None:
        self.apps.forget(status.name)
        self._rebuild()
        self.watch.changed(status.name)
        if self._on_status_cb is not None:
            self._on_status_cb(status)
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
            extra={"event": "servers_settled", "total": len(readiness.servers), "ready": readiness.count("ready"),
                   "failed": failed, "needs_auth": needs_auth, "required_not_ready": readiness.required_not_ready},  # fmt: skip
        )

    def readiness(self) -> Readiness:
        required = {name for name, conn in self.connections.items() if conn.config.required}
        required |= self._mcp.required_errors
        return Readiness([s for s in self.statuses() if s.status != "disabled"], required)

    def _rebuild(self) -> None:
        per_user = {name: {user: listing.tools for user, listing in conn.listings().items()}
                    for name, conn in self.connections.items() if isinstance(conn, UserSessions)}  # fmt: skip
        self.registry.rebuild(
            ((name, conn.config, conn.tools if conn.status.status == "ready" else [])
             for name, conn in self.connections.items()),
            per_user,
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
        self.watch.changed(name)
        fresh.start()

    async def stop(self) -> None:
        await asyncio.gather(*(conn.stop() for conn in self.connections.values()))
        if self._early is not None:
            await self._early.close()  # processes started early that no connection adopted

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
        for name, what in report.items():
            if what != "unchanged":
                self.watch.changed(name)
        self._say_when_settled()
        return report

    def resources_of(self, server: str, user: str) -> tuple[list[Any], list[Any], list[Any]]:
        """The server's resources, resource templates and prompts as `user` may see them: a
        per-user server's are those of the user's own session, never another user's."""
        conn = self.connections.get(server)
        if isinstance(conn, UserSessions):
            listing = conn.listing_of(user)
            return (listing.resources, listing.resource_templates, listing.prompts) if listing else ([], [], [])
        if conn is None or conn.status.status != "ready":
            return [], [], []
        return conn.resources, conn.resource_templates, conn.prompts

    def per_user_configs(self) -> list[tuple[str, ServerConfig]]:
        """The servers with one session per user."""
        return [(name, conn.config) for name, conn in self.connections.items() if isinstance(conn, UserSessions)]

    def server_config(self, server: str) -> ServerConfig | None:
        conn = self.connections.get(server)
        return conn.config if conn is not None else None

    async def _session(self, server: str, user: str | None) -> ServerConnection:
        conn = self.connections.get(server)
        if conn is None:
            raise ToolError(f"there is no server named '{server}'")
        if isinstance(conn, UserSessions):
            if user is None:
                raise ToolError(f"server '{server}' has one session per user; no user was given")
            return await conn.session_for(user)
        return conn

    async def read_resource(self, server: str, uri: str, user: str | None = None) -> list[RawArtifact]:
        """A resource's contents as raw files (text or bytes)."""
        conn = await self._session(server, user)
        outcome = ToolOutcome(ok=True, text="")
        with mcp_span("resources/read", uri, server=server, address=_address(conn)):
            contents = await conn.read_resource(uri)
        add_resource_contents(outcome, uri.rsplit("/", 1)[-1] or "resource", contents, self._max_artifact_bytes)
        if outcome.notes:
            raise ToolError("; ".join(outcome.notes))
        return outcome.artifacts

    async def app_resource(self, tool: ToolInfo, user: str | None = None) -> AppResource:
        """The app (`ui://` resource) of an app tool, read from its server on the user's session."""
        if tool.app_uri is None:
            raise ToolError(f"the tool '{tool.qualified_name}' has no app")
        uri = tool.app_uri
        conn = await self._session(tool.server, user)

        async def read() -> AppResource:
            return parse_app_resource(tool.server, uri, await conn.read_resource(uri), conn.resources,
                                      self._max_artifact_bytes)  # fmt: skip

        return await self.apps.get(tool.server, conn.user, uri, read)

    async def read_resource_json(self, server: str, uri: str, user: str | None = None) -> dict[str, Any]:
        """`resources/read` of a server, answered as MCP JSON (for an app of that server)."""
        contents = await (await self._session(server, user)).read_resource(uri)
        return {"contents": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents]}

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str],
                         user: str | None = None) -> list[tuple[str, str]]:  # fmt: skip
        conn = await self._session(server, user)
        with mcp_span("prompts/get", name, server=server, address=_address(conn)):
            return await conn.get_prompt(name, arguments)

    def skills(self, user: str | None) -> list[SkillEntry]:
        """The skills listed by the ready servers (per-user servers: on `user`'s open session)."""
        out: list[SkillEntry] = []
        for conn in self.connections.values():
            session = conn.session_of(user) if isinstance(conn, UserSessions) and user is not None else conn
            if isinstance(session, ServerConnection) and session.status.status == "ready":
                out.extend(session.skills)
        return out

    async def read_skill_file(self, entry: SkillEntry, uri: str, user: str | None = None) -> str:
        """A file of a skill, read when the model uses the skill and verified against its listing
        (`SkillRejected` otherwise)."""
        conn = await self._session(entry.server, user)
        with mcp_span("resources/read", uri, server=entry.server, address=_address(conn)):
            data = bytes_of(await conn.read_resource(uri))
        verify_skill_file(entry, uri, data)
        return text_of(data)

    async def tasks_of(self, server: str, user: str | None) -> TaskChannel:
        """`tasks/*` requests to `server` (on `user`'s own session for a per-user server)."""
        conn = await self._session(server, user)
        if conn.status.status != "ready":
            raise ServerUnavailable(f"server '{server}' is {conn.status.status}")
        return TaskChannel(server, conn.task_session())

    def statuses(self) -> list[ServerStatus]:
        out = [conn.status for conn in self.connections.values()]
        for name, error in self._mcp.errors.items():
            out.append(ServerStatus(name=name, status="failed", transport="unknown", reason=f"config error: {error}"))
        return out

    def description(self, server: str) -> str:
        conn = self.connections.get(server)
        return conn.config.description if conn else ""

    async def call(self, tool: ToolInfo, arguments: dict[str, Any], sink: CallSink, *,
                   user: str | None = None, raw: bool = False) -> ToolOutcome:  # fmt: skip
        """Run one call (on `user`'s own session for a per-user server).  Raises the ToolError
        tree; the caller turns it into data."""
        started = time.monotonic()
        conn = await self._session(tool.server, user)
        key = tool.server if conn.user is None else f"{tool.server}\n{conn.user}"  # per session
        async with self._limits.setdefault(key, asyncio.Semaphore(self._concurrency)):
            try:
                with mcp_span("tools/call", tool.qualified_name, server=tool.server, address=_address(conn),
                              tool=tool.qualified_name):  # fmt: skip
                    result = await conn.call(tool.name, arguments, sink)
                if isinstance(result, TaskHandle):
                    return ToolOutcome(ok=True, text=f"started as task {result.task_id}", task=result,
                                       duration_ms=int((time.monotonic() - started) * 1000))  # fmt: skip
            except ServerUnavailable:
                if user is not None and await self.sign_ins.step_up_wanted(tool.server, user):
                    raise NeedsAuth(f"server '{tool.server}' needs more permissions for '{tool.name}': press Connect "
                                    f"next to '{tool.server}' to allow them, then try again") from None  # fmt: skip
                raise
        outcome = await self._outcome(conn, result, raw=raw)
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        return outcome

    async def task_outcome(self, server: str, user: str | None, result: Any) -> ToolOutcome:
        """A finished task's result, parsed as a call's result is."""
        return await self._outcome(await self._session(server, user), result)

    async def _outcome(self, conn: ServerConnection, result: Any, *, raw: bool = False) -> ToolOutcome:
        outcome = parse_result(result, max_artifact_bytes=self._max_artifact_bytes)
        if raw:  # an app gets the whole MCP result (content blocks, structuredContent, _meta)
            outcome.mcp_result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
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
        return outcome


def _address(conn: ServerConnection) -> str | None:
    """The host of a remote server (``server.address``); none for stdio."""
    return urlsplit(conn.config.url).hostname if conn.config.url else None
