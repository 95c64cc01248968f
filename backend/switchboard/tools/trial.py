"""Start each enabled stdio server once, as the app would, and say how it went: for
`switchboard check-config --start`, so that a server that exits at once is seen (exit code,
the end of its stderr, the log's path) before the app runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..config.loader import McpConfig
from .models import ServerStatus
from .servers.connection import ServerConnection

__all__ = ["start_once"]


async def start_once(
    mcp: McpConfig, *, project_root: Path, log_dir: Path, timeout_s: float = 30.0
) -> list[ServerStatus]:
    """The first status other than `starting` of every enabled stdio server (`starting` when
    it did not finish its handshake within `timeout_s`). Each is stopped once it has one: it is
    not started again, so its failure is reported once (by the caller; the connection logs none)."""
    first: dict[str, ServerStatus] = {}
    settled: dict[str, asyncio.Event] = {}

    def note(status: ServerStatus) -> None:
        if status.status != "starting" and status.name not in first:
            first[status.name] = status
            settled[status.name].set()

    async def once(connection: ServerConnection) -> None:
        connection.start()
        try:
            await asyncio.wait_for(settled[connection.name].wait(), timeout_s + 5)
        except TimeoutError:
            pass
        finally:
            await connection.stop()

    names = [name for name, server in mcp.servers.items() if server.enabled and server.transport == "stdio"]
    settled.update((name, asyncio.Event()) for name in names)
    connections = [
        ServerConnection(
            name,
            mcp.servers[name],
            project_root=project_root,
            log_dir=log_dir,
            init_timeout_s=timeout_s,
            on_status=note,
            log_failures=False,
        )
        for name in names
    ]
    await asyncio.gather(*(once(connection) for connection in connections))
    return [first.get(c.name, c.status) for c in connections]
