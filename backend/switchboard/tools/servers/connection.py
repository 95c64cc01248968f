"""One supervised connection to one MCP server.

The connection runs in its own task: connect, list tools, then watch the
session (a ping when idle) until it breaks, and reconnect with capped
exponential backoff.  Calls borrow the live session; side traffic of a call
(progress, logs, elicitation, sampling) goes to that call's CallSink (call_traffic.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types
from fastmcp import Client
from fastmcp.client.transports import ClientTransport
from mcp.client import advertise
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp import MCPError

from ... import __version__
from ...config.models import ServerConfig
from ...errors import NeedsAuth
from ..apps import APP_MIME, UI_EXTENSION
from ..call_traffic import CallTraffic
from ..connection_state import ConnectionSetup, ServerLists
from ..diagnostics import HttpTrace, caused_by, describe_failure
from ..freshness import ReadCache, keep_listening, list_cache
from ..models import ServerStatus
from ..skills import SkillEntry, SkillsClientExtension, declares_skills, list_skills
from ..tasks import HostTasksExtension
from .connection_calls import ConnectionCalls
from .launch import EarlyStarts
from .stdio import stderr_tail
from .transports import build_transport, stderr_path

__all__ = ["ServerConnection"]

log = logging.getLogger("switchboard.tools")

PING_INTERVAL_S = 5.0
BACKOFF_CAP_S = 60.0


class ServerConnection(ConnectionCalls):
    """Connects, lists, watches and reconnects; its calls are in connection_calls.py."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        project_root: Path,
        log_dir: Path,
        init_timeout_s: float = 60.0,
        on_status: Callable[[ServerStatus], Awaitable[None] | None] | None = None,
        transport: ClientTransport | None = None,
        files_origin: str | None = None,
        user: str | None = None,
        headers: dict[str, str] | None = None,
        http_auth: httpx2.Auth | None = None,
        early: EarlyStarts | None = None,
        input_rounds: int = 10,
        log_failures: bool = True,
    ) -> None:
        self._setup = ConnectionSetup(
            project_root=project_root,
            log_dir=log_dir,
            init_timeout_s=init_timeout_s,
            on_status=on_status,
            transport=transport,
            files_origin=files_origin,
            headers=headers or {},
            http_auth=http_auth,
            early=early,
            input_rounds=input_rounds,
            log_failures=log_failures,
        )
        self.name = name
        self.user = user  # a per-user session's user
        self.config = config
        self._trace = HttpTrace()  # what the server answered on the wire during the last attempt
        self._client: Client[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._broken = asyncio.Event()
        self._traffic = CallTraffic(name)
        self._reads = ReadCache(shared=user is None)  # resource reads the server allowed to keep (ttlMs)
        self.listed = ServerLists()  # what the server said on its last connect
        self.ready_event = asyncio.Event()
        self.status = ServerStatus(
            name=name,
            status="starting" if config.enabled else "disabled",
            transport=config.transport or "stdio",
        )
        self._refresh: asyncio.Task[None] | None = None
        self._refresh_again = False

    @property
    def tools(self) -> list[mcp_types.Tool]:
        return self.listed.tools

    @property
    def resources(self) -> list[mcp_types.Resource]:
        return self.listed.resources

    @property
    def resource_templates(self) -> list[mcp_types.ResourceTemplate]:
        return self.listed.resource_templates

    @property
    def prompts(self) -> list[mcp_types.Prompt]:
        return self.listed.prompts

    @property
    def skills(self) -> list[SkillEntry]:
        return self.listed.skills

    @property
    def instructions(self) -> str:
        return self.listed.instructions

    @property
    def protocol_version(self) -> str | None:
        return self.listed.protocol_version

    @property
    def generation(self) -> int:
        return self.listed.generation

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> None:
        if self.config.enabled and self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self.name}")

    async def stop(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.debug("server %s failed while stopping", self.name, exc_info=True)

    async def _set_status(self, status: str, reason: str | None = None, **extra: Any) -> None:
        self.status = ServerStatus(
            name=self.name,
            status=status,
            transport=self.status.transport,
            reason=reason,
            stderr_tail=extra.get("stderr_tail"),
            stderr_log=extra.get("stderr_log"),
            ready_after_s=extra.get("ready_after_s"),
            tool_count=len(self.listed.tools) if status == "ready" else 0,
            protocol_version=self.listed.protocol_version,
        )
        if status == "ready":
            self.ready_event.set()
        else:
            self.ready_event.clear()
        if self._setup.on_status is not None:
            outcome = self._setup.on_status(self.status)
            if outcome is not None:
                await outcome

    def _make_client(self) -> Client[Any]:
        transport = self._setup.transport or build_transport(
            self.name,
            self.config,
            project_root=self._setup.project_root,
            log_dir=self._setup.log_dir,
            files_origin=self._setup.files_origin,
            trace=self._trace,
            headers=self._setup.headers,
            auth=self._setup.http_auth,
            early=self._setup.early,
        )
        roots = [Path(r).resolve().as_uri() if "://" not in r else r for r in self.config.roots] or None
        return Client(
            transport,
            name=f"switchboard:{self.name}",
            client_info=mcp_types.Implementation(name="switchboard", version=__version__),
            init_timeout=0,  # disabled: _supervise times the handshake, so a timeout stays a TimeoutError
            roots=roots,
            log_handler=self._traffic.on_log,
            elicitation_handler=self._traffic.on_elicit,
            sampling_handler=self._traffic.on_sample if self.config.sampling != "deny" else None,
            message_handler=self._on_message,
            input_required_max_rounds=self._setup.input_rounds,
            cache=list_cache(self.name, self.user),  # 2026-07-28 cache hints on lists; `private` stays per user
            # MCP Apps: the host renders `ui://` resources of this MIME type; a tools/call may come back
            # as a task (tools/tasks.py); skills are offered to the model (tools/skills.py)
            extensions=[
                advertise(UI_EXTENSION, {"mimeTypes": [APP_MIME]}),
                HostTasksExtension(),
                SkillsClientExtension(),
            ],
        )

    async def _supervise(self) -> None:
        attempt = 0
        while True:
            started = time.monotonic()
            try:
                self._trace.reset()
                client = self._make_client()
                async with contextlib.AsyncExitStack() as stack:
                    async with asyncio.timeout(self._setup.init_timeout_s):
                        await stack.enter_async_context(client)
                        self.listed.tools = await client.list_tools()
                        await self._list_extras(client)
                    self._client = client
                    self.listed.protocol_version = client.protocol_version
                    self.listed.instructions = client.instructions or ""
                    self._broken.clear()
                    self.listed.generation += 1
                    attempt = 0
                    await self._set_status("ready", ready_after_s=round(time.monotonic() - started, 3))
                    await self._watch_and_listen(client)
                    # Say so before the old session is closed (that can take seconds).
                    await self._set_status("starting", "the connection was lost; reconnecting")
                    self._client = None
            except asyncio.CancelledError:
                self._client = None
                raise
            except Exception as exc:
                self._client = None
                if self.user is not None and (needs := caused_by(exc, NeedsAuth)) is not None:
                    await self._set_status("needs_auth", needs.message)  # e.g. a step-up: the scopes to allow
                    return
                if self.user is not None and self._trace.status == 401:
                    await self._set_status("needs_auth", "the server refused the credential (HTTP 401): connect again")
                    return
                log_file = stderr_path(self._setup.log_dir, self.name) if self.config.transport == "stdio" else None
                tail = stderr_tail(log_file) if log_file is not None else None
                reason = describe_failure(
                    exc, url=self.config.url or "", trace=self._trace, timeout_s=self._setup.init_timeout_s
                )
                await self._set_status("failed", reason, stderr_tail=tail, stderr_log=str(log_file) if tail else None)
                if self._setup.log_failures:
                    log.warning("server %s failed: %s", self.name, reason)
            attempt += 1
            await asyncio.sleep(min(BACKOFF_CAP_S, 0.5 * 2**attempt))

    async def _list_extras(self, client: Client[Any]) -> None:
        """Resources, templates, prompts and skills, for servers that offer them."""
        caps = client.server_capabilities
        self.listed.resources, self.listed.resource_templates, self.listed.prompts = [], [], []
        try:
            if caps is None or caps.resources is not None:
                self.listed.resources = await client.list_resources()
                self.listed.resource_templates = await client.list_resource_templates()
            if caps is None or caps.prompts is not None:
                self.listed.prompts = await client.list_prompts()
        except MCPError as exc:
            log.info("server %s: listing resources/prompts failed: %s", self.name, exc.message)
        try:
            self.listed.skills = await list_skills(self.name, client.session) if declares_skills(caps) else []
        except (MCPError, ValidationError) as exc:
            self.listed.skills = []
            log.info("server %s: listing skills failed: %s", self.name, exc)

    # -- list_changed ------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        """A server's tools, resources or prompts changed: list them again without a reconnect.
        (Listing inside the handler would wait on the very session that delivers the message.)"""
        changed = (
            mcp_types.ToolListChangedNotification,
            mcp_types.ResourceListChangedNotification,
            mcp_types.PromptListChangedNotification,
        )
        self._reads.forget(message)
        if not isinstance(message, changed):
            return
        if self._refresh is not None and not self._refresh.done():
            self._refresh_again = True
            return
        self._refresh = asyncio.create_task(self._relist(), name=f"mcp:{self.name}:list_changed")

    async def _relist(self) -> None:
        self._refresh_again = True
        while self._refresh_again:
            self._refresh_again = False
            client = self._client
            if client is None or self.status.status != "ready":
                return
            try:
                tools = await client.list_tools()
                await self._list_extras(client)
            except (MCPError, TimeoutError, OSError, httpx.HTTPError, RuntimeError) as exc:
                log.info("server %s: listing again after list_changed failed: %s", self.name, exc)
                return
            self.listed.tools = tools
            log.info(
                "server %s changed its lists",
                self.name,
                extra={"event": "server_list_changed", "server": self.name, "tools": len(tools)},
            )
            # The registry rebuilds from the new lists (a changed definition meets the pins again)
            # and the page hears about it, as after a reconnect.
            await self._set_status("ready", ready_after_s=self.status.ready_after_s)

    async def _watch_and_listen(self, client: Client[Any]) -> None:
        self._reads = ReadCache(shared=self.user is None)
        listener = asyncio.create_task(
            keep_listening(self.name, client.session, self._resource_uris), name=f"mcp:{self.name}:listen"
        )
        try:
            await self._watch(client)
        finally:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # a broken stream dies with its session
                await listener

    def _resource_uris(self) -> list[str]:
        return [str(resource.uri) for resource in self.listed.resources]

    async def _watch(self, client: Client[Any]) -> None:
        while True:
            try:
                await asyncio.wait_for(self._broken.wait(), timeout=PING_INTERVAL_S)
                return
            except TimeoutError:
                pass
            if self._traffic.busy or (
                self.config.transport == "http" and self.listed.protocol_version in MODERN_PROTOCOL_VERSIONS
            ):
                # Calls in flight notice a dead session themselves; a 2026 server over HTTP holds no
                # session at all, so a restart between two requests is nothing to reconnect for.
                continue
            try:
                await asyncio.wait_for(client.ping(), timeout=PING_INTERVAL_S)
            except MCPError as exc:
                # Any answer means the server is alive (the 2026 protocol has no ping).
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    return
            except (TimeoutError, OSError, httpx.HTTPError, httpx2.HTTPError, RuntimeError):
                return
