"""How a stdio server's process is launched (command, arguments, working directory,
environment, where its stderr goes), and starting those processes early.

A Python MCP server spends about a second of CPU importing its libraries before it reads
its first message, and the app spends longer importing its own. `EarlyStarts` spawns every
enabled stdio server's process as soon as the config is read, before the app is built, so
those imports run side by side; the server's connection then adopts its process for its
first session instead of spawning one. The process is the one the connection would have
started (same command, arguments, directory and minimal environment, its own process
group), only sooner: isolation is unchanged. A connection that reconnects spawns afresh.
Bundled servers are forked from one parent that has imported fastmcp already (`forked.py`).

This module imports neither fastmcp nor the MCP SDK, so it can run before they load.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ...errors import ConfigError
from .forked import Zygote, forkable

if TYPE_CHECKING:
    from anyio.abc import Process

    from ...config.loader import McpConfig
    from ...config.models import ServerConfig

__all__ = [
    "CA_ENV",
    "FILES_ORIGIN_ENV",
    "INHERITED_ENV",
    "EarlyStarts",
    "Launch",
    "child_environment",
    "stderr_path",
    "stdio_launch",
]

log = logging.getLogger("switchboard.tools")

# Tells a stdio child where the host's signed file links live, so a server that
# fetches `file_url` can refuse every other address (see backend/mcp/_common/fetch.py).
FILES_ORIGIN_ENV = "SWITCHBOARD_FILES_ORIGIN"

# What a child inherits from the app's environment: the MCP SDK's own list on POSIX
# (`mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS`, a test keeps the two equal). The app's
# secrets never reach a child.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")

# Where the host's trusted certificate authorities are (a company CA that inspects TLS): passed
# through as well, so that `uvx`, pip, requests, curl and Node.js in a server trust what the host
# trusts. They name files, not secrets.
CA_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")

_PYTHON = {"python", "python3", "python3.11", "python3.12", "python3.13"}


def stderr_path(log_dir: Path, server: str) -> Path:
    return log_dir / "servers" / f"{server}.stderr.log"


def child_environment(extra: dict[str, str] | None) -> dict[str, str]:
    """The minimal inherited environment (and the CA variables) plus the server's own `env`."""
    inherited = {
        key: value
        for key in (*INHERITED_ENV, *CA_ENV)
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }  # ("()": an exported shell function)
    return inherited | (extra or {})


@dataclass(frozen=True)
class Launch:
    command: str
    args: tuple[str, ...]
    cwd: Path
    env: tuple[tuple[str, str], ...]  # the server's own variables (and the files origin), not the inherited ones
    log_file: Path


def stdio_launch(
    name: str, config: ServerConfig, *, project_root: Path, log_dir: Path, files_origin: str | None = None
) -> Launch:
    """`files_origin` (the app's public base URL) is given to every stdio child as
    SWITCHBOARD_FILES_ORIGIN; it is not a secret. The server's own `env` may override it.
    Raises ConfigError for a missing working directory or command."""
    assert config.command is not None
    command = sys.executable if config.command in _PYTHON else config.command
    cwd = Path(config.cwd) if config.cwd else project_root
    if not cwd.is_absolute():
        cwd = project_root / cwd
    if not cwd.is_dir():
        raise ConfigError(f"working directory {cwd} does not exist", server=name, field="cwd")
    if shutil.which(command, path=None) is None and not Path(command).is_file():
        raise ConfigError(f"command '{command}' was not found on PATH", server=name, field="command")
    env = ({FILES_ORIGIN_ENV: files_origin} if files_origin else {}) | dict(config.env)
    return Launch(command, tuple(config.args), cwd, tuple(env.items()), stderr_path(log_dir, name))


class EarlyStarts:
    """Stdio server processes started before the app is built, each waiting to be adopted
    by its connection (`take`). Whatever is not adopted is stopped by `close`.

    With `fork` (the default), bundled servers are forked from one pre-imported parent
    (`forked.py`), now and whenever their connection starts them again (`spawn`)."""

    def __init__(self, *, fork: bool = True) -> None:
        self._waiting: dict[str, tuple[Launch, asyncio.Future[Process | None]]] = {}
        self._fork = fork
        self._zygote: Zygote | None = None
        self._project_root: Path | None = None

    async def start(self, mcp: McpConfig, *, project_root: Path, log_dir: Path, files_origin: str | None) -> None:
        """Spawn every enabled stdio server of `mcp` (per-user servers excepted: they start per user)."""
        if sys.platform == "win32":  # the SDK starts Windows servers in a job object; leave that to it
            return
        import anyio

        self._project_root = project_root
        for name, config in mcp.servers.items():
            if not config.enabled or config.transport != "stdio" or config.sessions_per_user or name in self._waiting:
                continue
            try:
                launch = stdio_launch(
                    name, config, project_root=project_root, log_dir=log_dir, files_origin=files_origin
                )
                launch.log_file.parent.mkdir(parents=True, exist_ok=True)
                launch.log_file.unlink(missing_ok=True)
                if await self._start_zygote(launch, log_dir):
                    task = asyncio.create_task(self._forked(launch), name=f"mcp:{name}:fork")
                    self._waiting[name] = (launch, task)
                    continue
                with launch.log_file.open("a", encoding="utf-8", errors="replace") as errlog:
                    process = await anyio.open_process(
                        [launch.command, *launch.args],
                        env=child_environment(dict(launch.env)),
                        stderr=errlog,
                        cwd=launch.cwd,
                        start_new_session=True,
                    )
            except (ConfigError, OSError):
                continue  # the connection tries again in its own way and reports why it fails
            self._waiting[name] = (launch, _done(process))

    async def _start_zygote(self, launch: Launch, log_dir: Path) -> bool:
        """Whether `launch` is to be forked, starting the zygote for the first such server."""
        root = self._project_root
        if not self._fork or root is None or not forkable(launch.command, launch.args, launch.cwd, root):
            return False
        if self._zygote is None:
            zygote = Zygote(child_environment(None), stderr_path(log_dir, "_bundled-parent"))
            try:
                await zygote.start()
            except OSError:
                log.warning("the bundled servers' parent could not start; they start on their own", exc_info=True)
                self._fork = False
                return False
            self._zygote = zygote
        return True

    async def _forked(self, launch: Launch) -> Process | None:
        try:
            with launch.log_file.open("a", encoding="utf-8", errors="replace") as errlog:
                return await self.spawn(launch, errlog)
        except OSError:
            return None  # its connection starts it the usual way

    async def spawn(self, launch: Launch, errlog: TextIO) -> Process | None:
        """A fresh process for `launch` forked from the pre-imported parent, or None when `launch`
        is not a bundled server (or the parent cannot fork it): the caller then starts it itself."""
        if self._zygote is None or self._project_root is None:
            return None
        if not forkable(launch.command, launch.args, launch.cwd, self._project_root):
            return None
        return await self._zygote.spawn(
            [launch.command, *launch.args], launch.cwd, child_environment(dict(launch.env)), errlog
        )

    def take(self, name: str, launch: Launch) -> asyncio.Future[Process | None] | None:
        """The early process of `name` (to be awaited), if one was started exactly as `launch`."""
        waiting = self._waiting.pop(name, None)
        if waiting is None:
            return None
        if waiting[0] != launch:  # the config changed since: start afresh
            waiting[1].add_done_callback(_kill_result)
            return None
        return waiting[1]

    async def close(self) -> None:
        waiting, self._waiting = self._waiting, {}
        processes = [p for _, task in waiting.values() if (p := await _result(task)) is not None]
        for process in processes:
            _kill(process)
        for process in processes:
            await process.wait()
        zygote, self._zygote = self._zygote, None
        if zygote is not None:
            await zygote.close()


def _done(process: Process) -> asyncio.Future[Process | None]:
    future: asyncio.Future[Process | None] = asyncio.get_running_loop().create_future()
    future.set_result(process)
    return future


async def _result(task: asyncio.Future[Process | None]) -> Process | None:
    if not task.done():
        task.cancel()  # a fork still waiting: whatever the parent made of it stops with the parent
    try:
        return await task
    except (Exception, asyncio.CancelledError):
        return None


def _kill_result(task: asyncio.Future[Process | None]) -> None:
    if not task.cancelled() and task.exception() is None and (process := task.result()) is not None:
        _kill(process)


def _kill(process: Process) -> None:
    """SIGKILL to its process group (it may still be starting, or adopted by nobody)."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, 9)  # its own process group, as the SDK's shutdown does
        except (ProcessLookupError, PermissionError):
            pass
