"""Build a fastmcp transport from a server's typed config (one place for
stdio, SSE and streamable HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx2
from fastmcp.client.transports import ClientTransport, SSETransport, StreamableHttpTransport
from fastmcp.client.transports.base import TransportOptions

from mcp import ClientSession, StdioServerParameters

from ...config.models import ServerConfig
from ..diagnostics import HttpTrace, http_client_factory
from ..oauth.url_guard import POLICY_KEY, EndpointPolicy, origin_of
from .launch import FILES_ORIGIN_ENV, EarlyStarts, Launch, stderr_path, stdio_launch
from .stdio import ProcessEnd, ServerExited, stdio_streams

if TYPE_CHECKING:
    from anyio.abc import Process

__all__ = ["FILES_ORIGIN_ENV", "build_transport", "stderr_path"]


class _StdioTransport(ClientTransport):
    """A child process over stdio, one session per `connect_session`, through the
    reader of `stdio.py` (bytes that are not UTF-8 and huge lines are handled there).
    The supervisor in connection.py owns restarts, so this transport keeps no
    process between sessions. `early`: a process already started for this server
    (launch.py), used for the first session instead of spawning one; `starts`: where a
    bundled server's later processes are forked from."""

    def __init__(
        self,
        params: StdioServerParameters,
        launch: Launch,
        early: asyncio.Future[Process | None] | None = None,
        starts: EarlyStarts | None = None,
    ) -> None:
        self._params = params
        self._launch = launch
        self._log_file = launch.log_file
        self._early = early
        self._starts = starts

    @contextlib.asynccontextmanager
    async def connect_session(
        self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
    ) -> AsyncIterator[ClientSession]:
        options = transport_options or TransportOptions()
        early, self._early = self._early, None
        process = await early if early is not None else None
        if process is None:  # a fresh process, a fresh stderr log (an early one already writes there)
            self._log_file.unlink(missing_ok=True)
        ended = ProcessEnd()
        try:
            with self._log_file.open("a", encoding="utf-8", errors="replace") as errlog:
                if process is None and self._starts is not None:
                    process = await self._starts.spawn(self._launch, errlog)
                async with stdio_streams(self._params, errlog, process, ended) as (read, write):
                    async with options.session_class(read, write, **session_kwargs) as session:
                        yield session
        except Exception as exc:
            if ended.code is not None:  # the process's own exit is the cause, whatever it broke
                raise ServerExited(ended.code, str(self._log_file)) from exc
            raise

    def __repr__(self) -> str:
        return f"<stdio: {self._params.command} {' '.join(self._params.args)}>"


def _guarded(factory: Any, name: str, config: ServerConfig) -> Any:
    """`factory`'s clients with every request (each redirect too) marked for the endpoint policy:
    `PinnedTransport` checks its address and connects to the address checked (no DNS rebinding)."""
    own = origin_of(config.url or "") if config.guard_requests == "others" else None
    policy = EndpointPolicy(server=name, own_origin=own, allow_http=True, what="connection")

    async def mark(request: httpx2.Request) -> None:
        request.extensions = {**request.extensions, POLICY_KEY: policy}

    def make(*args: Any, **kwargs: Any) -> httpx2.AsyncClient:
        client: httpx2.AsyncClient = factory(*args, **kwargs)
        client.event_hooks = {**client.event_hooks, "request": [*client.event_hooks.get("request", []), mark]}
        return client

    return make


def build_transport(
    name: str,
    config: ServerConfig,
    *,
    project_root: Path,
    log_dir: Path,
    files_origin: str | None = None,
    trace: HttpTrace | None = None,
    headers: dict[str, str] | None = None,
    auth: httpx2.Auth | None = None,
    early: EarlyStarts | None = None,
) -> ClientTransport:
    """`files_origin`: see `stdio_launch`. `early`: processes started before the app was built."""
    if config.transport == "stdio":
        launch = stdio_launch(name, config, project_root=project_root, log_dir=log_dir, files_origin=files_origin)
        launch.log_file.parent.mkdir(parents=True, exist_ok=True)
        # The child gets a minimal environment (PATH, HOME, ...) plus `env`; the app's own secrets never reach it.
        params = StdioServerParameters(
            command=launch.command, args=list(launch.args), env=dict(launch.env), cwd=str(launch.cwd)
        )
        return _StdioTransport(params, launch, early.take(name, launch) if early is not None else None, early)
    assert config.url is not None
    factory = http_client_factory(trace or HttpTrace())
    if config.guard_requests != "none":
        factory = _guarded(factory, name, config)
    # `headers`/`auth`: one user's own credential, for that user's session only.
    all_headers = dict(config.headers) | (headers or {})
    if config.transport == "sse":
        return SSETransport(config.url, headers=all_headers, auth=auth, httpx_client_factory=factory)
    return StreamableHttpTransport(config.url, headers=all_headers, auth=auth, httpx_client_factory=factory)
