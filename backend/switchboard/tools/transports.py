"""Build a fastmcp transport from a server's typed config (one place for
stdio, SSE and streamable HTTP)."""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2

from fastmcp.client.transports import ClientTransport, SSETransport, StreamableHttpTransport
from fastmcp.client.transports.base import TransportOptions
from mcp import ClientSession, StdioServerParameters

from ..config.models import ServerConfig
from ..errors import ConfigError
from .diagnostics import HttpTrace, http_client_factory
from .stdio import stdio_streams

__all__ = ["FILES_ORIGIN_ENV", "build_transport", "stderr_path"]

# Tells a stdio child where the host's signed file links live, so a server that
# fetches `file_url` can refuse every other address (see backend/mcp/_common/fetch.py).
FILES_ORIGIN_ENV = "SWITCHBOARD_FILES_ORIGIN"

_PYTHON = {"python", "python3", "python3.11", "python3.12", "python3.13"}


def stderr_path(log_dir: Path, server: str) -> Path:
    return log_dir / "servers" / f"{server}.stderr.log"


class _StdioTransport(ClientTransport):
    """A child process over stdio, one session per `connect_session`, through the
    reader of `stdio.py` (bytes that are not UTF-8 and huge lines are handled there).
    The supervisor in connection.py owns restarts, so this transport keeps no
    process between sessions."""

    def __init__(self, params: StdioServerParameters, log_file: Path) -> None:
        self._params = params
        self._log_file = log_file

    @contextlib.asynccontextmanager
    async def connect_session(self, *, transport_options: TransportOptions | None = None,
                              **session_kwargs: Any) -> AsyncIterator[ClientSession]:  # fmt: skip
        options = transport_options or TransportOptions()
        with self._log_file.open("a", encoding="utf-8", errors="replace") as errlog:
            async with stdio_streams(self._params, errlog) as (read, write):
                async with options.session_class(read, write, **session_kwargs) as session:
                    yield session

    def __repr__(self) -> str:
        return f"<stdio: {self._params.command} {' '.join(self._params.args)}>"


def build_transport(
    name: str, config: ServerConfig, *, project_root: Path, log_dir: Path, files_origin: str | None = None,
    trace: HttpTrace | None = None, headers: dict[str, str] | None = None, auth: httpx2.Auth | None = None,
) -> ClientTransport:
    """`files_origin` (the app's public base URL) is given to every stdio child as
    SWITCHBOARD_FILES_ORIGIN; it is not a secret. The server's own `env` may override it."""
    if config.transport == "stdio":
        assert config.command is not None
        command = sys.executable if config.command in _PYTHON else config.command
        cwd = Path(config.cwd) if config.cwd else project_root
        if not cwd.is_absolute():
            cwd = project_root / cwd
        if not cwd.is_dir():
            raise ConfigError(f"working directory {cwd} does not exist", server=name, field="cwd")
        if shutil.which(command, path=None) is None and not Path(command).is_file():
            raise ConfigError(f"command '{command}' was not found on PATH", server=name, field="command")
        log_file = stderr_path(log_dir, name)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        # The SDK gives the child a minimal environment (PATH, HOME, ...) plus
        # `env`; the app's own secrets never reach it.
        env = ({FILES_ORIGIN_ENV: files_origin} if files_origin else {}) | dict(config.env)
        params = StdioServerParameters(command=command, args=list(config.args), env=env, cwd=str(cwd))
        return _StdioTransport(params, log_file)
    assert config.url is not None
    factory = http_client_factory(trace or HttpTrace())
    # `headers`/`auth`: one user's own credential, for that user's session only.
    all_headers = dict(config.headers) | (headers or {})
    if config.transport == "sse":
        return SSETransport(config.url, headers=all_headers, auth=auth, httpx_client_factory=factory)
    return StreamableHttpTransport(config.url, headers=all_headers, auth=auth, httpx_client_factory=factory)
