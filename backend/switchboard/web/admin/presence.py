"""Who holds what, on every process, for the admin console's Users tab: a user's open pages
(websockets) and the servers they hold a session of their own with.

Each process counts its own.  Several processes on one PostgreSQL also share their counts every
`SHARE_EVERY_S` seconds on their heartbeat row (`app_processes.presence`), and the console adds the
other live processes' last shares to its own counts: a page opened or closed on another process
shows within that time.  A process that stops signs its row off; one that falls silent is left out."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ...chat.relay.postgres import PostgresRelay
from ...chat.relay.seam import SwitchedRelay
from ...errors import SwitchboardError
from ...services import Services
from ...tools.servers.user_sessions import UserSessions
from ..ws import OpenSockets

__all__ = ["SHARE_EVERY_S", "everywhere", "keep_shared"]

log = logging.getLogger("switchboard")
SHARE_EVERY_S = 5.0
_RESHARE_AFTER = 6  # unchanged counts are shared again every sixth round (a re-made heartbeat row)

Held = dict[str, dict[str, Any]]  # user -> {"sessions": open pages, "servers": [server, ...]}


def here(services: Services, sockets: OpenSockets) -> Held:
    held: Held = {}
    for email, count in sockets.counts().items():
        held.setdefault(email, {"sessions": 0, "servers": []})["sessions"] = count
    for name, conn in services.pool.connections.items():
        if isinstance(conn, UserSessions):
            for email in conn.listings():
                held.setdefault(email, {"sessions": 0, "servers": []})["servers"].append(name)
    return held


def _shared_by(services: Services) -> PostgresRelay | None:
    relay = services.turns.relay
    if isinstance(relay, SwitchedRelay):
        relay = relay.current
    return relay if isinstance(relay, PostgresRelay) else None


async def everywhere(services: Services, sockets: OpenSockets) -> Held:
    """This process's counts plus the other live processes' last shares."""
    held = here(services, sockets)
    relay = _shared_by(services)
    if relay is None:
        return held
    for other in await relay.live.presences(relay.lease_s / 2, relay.process_id):
        for email, theirs in other.items():
            mine = held.setdefault(email, {"sessions": 0, "servers": []})
            mine["sessions"] += int(theirs.get("sessions", 0))
            mine["servers"] = sorted({*mine["servers"], *theirs.get("servers", [])})
    return held


async def keep_shared(services: Services, sockets: OpenSockets) -> None:
    """Runs for the life of the app: shares this process's counts when they change."""
    last: Held | None = None
    rounds = 0
    while True:
        await asyncio.sleep(SHARE_EVERY_S)
        relay = _shared_by(services)
        if relay is None:
            continue
        now, rounds = here(services, sockets), rounds + 1
        if now == last and rounds % _RESHARE_AFTER:
            continue
        try:
            await relay.live.share_presence(relay.process_id, now)
            last = now
        except SwitchboardError as exc:
            log.warning("could not share the open sessions: %s", exc.message, extra={"event": "presence_failed"})
