"""How a stdio server's process is launched (command, arguments, working directory,
environment, where its stderr goes), and starting those processes early.

A Python MCP server spends about a second of CPU importing its libraries before it reads
its first message, and the app spends longer importing its own. `EarlyStarts` spawns every
enabled stdio server's process as soon as the config is read, before the app is built, so
those imports run side by side; the server's connection then adopts its process for its
first session instead of spawning one. The process is the one the connection would have
started (same command, arguments, directory and minimal environment, its own process
group), only sooner: isolation is unchanged. A connection that reconnects spawns afresh.

This module imports neither fastmcp nor the MCP SDK, so it can run before they load.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from anyio.abc import Process

    from ..config.loader import McpConfig
    from ..config.models import ServerConfig

__all__ = ["FILES_ORIGIN_ENV", "INHERITED_ENV", "EarlyStarts", "Launch", "child_environment", "stderr_path", "stdio_launch"]

log = logging.getLogger("switchboard.tools")

# Tells a stdio child where the host's signed file links live, so a server that
# fetches `file_url` can refuse every other address (see backend/mcp/_common/fetch.py).
FILES_ORIGIN_ENV = "SWITCHBOARD_FILES_ORIGIN"

# What a child inherits from the app's environment: the MCP SDK's own list on POSIX
# (`mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS`, a test keeps the two equal). The app's
# secrets never reach a child.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")

_PYTHON = {"python", "python3", "python3.11", "python3.12", "python3.13"}


def stderr_path(log_dir: Path, server: str) -> Path:
    return log_dir / "servers" / f"{server}.stderr.log"


def child_environment(extra: dict[str, str] | None) -> dict[str, str]:
    """The minimal inherited environment plus the server's own `env`."""
    inherited = {key: value for key in INHERITED_ENV if (value := os.environ.get(key)) is not None
                 and not value.startswith("()")}  # fmt: skip  # ("()": an exported shell function)
    return inherited | (extra or {})


@dataclass(frozen=True)
class Launch:
    command: str
    args: tuple[str, ...]
    cwd: Path
    env: tuple[tuple[str, str], ...]  # the server's own variables (and the files origin), not the inherited ones
    log_file: Path


def stdio_launch(name: str, config: ServerConfig, *, project_root: Path, log_dir: Path,
                 files_origin: str | None = None) -> Launch:  # fmt: skip
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
    by its connection (`take`). Whatever is not adopted is stopped by `close`."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[Launch, Process]] = {}

    async def start(self, mcp: McpConfig, *, project_root: Path, log_dir: Path, files_origin: str | None) -> None:
        """Spawn every enabled stdio server of `mcp` (per-user servers excepted: they start per user)."""
        if sys.platform == "win32":  # the SDK starts Windows servers in a job object; leave that to it
            return
        import anyio

        for name, config in mcp.servers.items():
            if not config.enabled or config.transport != "stdio" or config.sessions_per_user or name in self._waiting:
                continue
            try:
                launch = stdio_launch(name, config, project_root=project_root, log_dir=log_dir, files_origin=files_origin)
                launch.log_file.parent.mkdir(parents=True, exist_ok=True)
                launch.log_file.unlink(missing_ok=True)
                with launch.log_file.open("a", encoding="utf-8", errors="replace") as errlog:
                    process = await anyio.open_process([launch.command, *launch.args], env=child_environment(dict(launch.env)),
                                                       stderr=errlog, cwd=launch.cwd, start_new_session=True)  # fmt: skip
            except (ConfigError, OSError):
                continue  # the connection tries again in its own way and reports why it fails
            self._waiting[name] = (launch, process)

    def take(self, name: str, launch: Launch) -> Process | None:
        """The early process of `name`, if one waits that was launched exactly as `launch`."""
        waiting = self._waiting.pop(name, None)
        if waiting is None:
            return None
        if waiting[0] != launch or waiting[1].returncode is not None:
            _kill(waiting[1])  # the config changed since (or it already ended): start afresh
            return None
        return waiting[1]

    async def close(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for _, process in waiting.values():
            _kill(process)
        for _, process in waiting.values():
            await process.wait()


def _kill(process: Process) -> None:
    if process.returncode is None:
        try:
            os.killpg(process.pid, 9)  # its own process group, as the SDK's shutdown does
        except (ProcessLookupError, PermissionError):
            pass
