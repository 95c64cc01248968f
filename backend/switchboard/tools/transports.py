"""Build a fastmcp transport from a server's typed config (one place for
stdio, SSE and streamable HTTP)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from fastmcp.client.transports import ClientTransport, SSETransport, StdioTransport, StreamableHttpTransport

from ..config.models import ServerConfig
from ..errors import ConfigError

__all__ = ["build_transport", "stderr_path"]

_PYTHON = {"python", "python3", "python3.11", "python3.12", "python3.13"}


def stderr_path(log_dir: Path, server: str) -> Path:
    return log_dir / "servers" / f"{server}.stderr.log"


def build_transport(name: str, config: ServerConfig, *, project_root: Path, log_dir: Path) -> ClientTransport:
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
        return StdioTransport(
            command=command,
            args=list(config.args),
            env=dict(config.env),
            cwd=str(cwd),
            keep_alive=False,
            log_file=log_file,
        )
    assert config.url is not None
    if config.transport == "sse":
        return SSETransport(config.url, headers=dict(config.headers))
    return StreamableHttpTransport(config.url, headers=dict(config.headers))
