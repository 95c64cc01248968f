"""The uvicorn server `switchboard serve` runs: at SIGTERM it drains before it closes connections.

uvicorn's own shutdown closes every websocket at once (code 1012) and then waits for HTTP
responses without a limit, so an answer streamed to a websocket was cut and one streamed to
`/api/chat` could hold the process up indefinitely (a turn waiting for an approval). Here the
listening socket closes first (new connections go to the other processes behind the load
balancer), then the app drains (running answers get `SWITCHBOARD_SHUTDOWN_GRACE_S` to finish and
their pages stay connected; the rest are stopped and their listeners told), and only then does
uvicorn close what is left."""

from __future__ import annotations

import logging
import socket
from collections.abc import Awaitable, Callable

import uvicorn

__all__ = ["DrainingServer"]

log = logging.getLogger("switchboard")


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, drain: Callable[[], Awaitable[None]]) -> None:
        super().__init__(config)
        self._drain = drain

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        try:
            await self._drain()
        except Exception:
            log.exception("draining the running answers failed", extra={"event": "drain_failed"})
        await super().shutdown(sockets=sockets)
