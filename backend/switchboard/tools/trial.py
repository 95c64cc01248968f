"""Start each enabled stdio server once, as the app would, and say how it went: for
`switchboard check-config --start`, so that a server that exits at once is seen (exit code,
the end of its stderr, the log's path) before the app runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..config.loader import McpConfig
from .connection import ServerConnection
from .models import ServerStatus

__all__ = ["start_once"]


async def start_once(mcp: McpConfig, *, project_root: Path, log_dir: Path, timeout_s: float = 30.0) -> list[ServerStatus]:
    """The first status other than `starting` of every enabled stdio server (`starting` when
    it did not finish its handshake within `timeout_s`); each is stopped again."""
    first: dict[str, ServerStatus] = {}
    settled = asyncio.Event()
    names = [name for name, server in mcp.servers.items() if server.enabled and server.transport == "stdio"]

    def note(status: ServerStatus) -> None:
        if status.status != "starting":
            first.setdefault(status.name, status)
            if len(first) == len(names):
                settled.set()

    connections = [ServerConnection(name, mcp.servers[name], project_root=project_root, log_dir=log_dir,
                                    init_timeout_s=timeout_s, on_status=note) for name in names]  # fmt: skip
    for connection in connections:
        connection.start()
    try:
        if names:
            await asyncio.wait_for(settled.wait(), timeout_s + 5)
    except TimeoutError:
        pass
    finally:
        await asyncio.gather(*(connection.stop() for connection in connections))
    return [first.get(c.name, c.status) for c in connections]
