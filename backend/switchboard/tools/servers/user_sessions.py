"""One server whose sessions are per user: a supervised ServerConnection per
(server, user), opened on first use with that user's credential, closed after
`idle_close_s` without calls, and at most `max_user_sessions` at once (the least
recently used idle one is closed to make room).

To the pool it looks like one connection (`status`, `start`, `stop`), with no
shared listing: each user's session lists its own tools, resources and prompts,
and `listing_of(user)` gives that user's, to that user only.  A listing outlives
its session's idle close (the page keeps showing the user's tools; a call opens
the session again) and goes when the user disconnects.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

from ...config.models import ServerConfig
from ...errors import NeedsAuth, ServerUnavailable
from ..models import ServerStatus
from .connection import ServerConnection

__all__ = ["Credential", "Listing", "UserSessions"]

log = logging.getLogger("switchboard.tools")

# (extra headers, httpx2 auth) for one user's session; raises NeedsAuth when the user has none.
Credential = Callable[[str], Awaitable[tuple[dict[str, str], httpx2.Auth | None]]]
MakeConnection = Callable[[str, dict[str, str], httpx2.Auth | None], ServerConnection]
LISTINGS_PER_SESSION = 10  # listings kept (after idle close) per `max_user_sessions`; the least recent go


@dataclass(frozen=True, slots=True)
class Listing:
    """What one user's session of the server listed."""

    tools: list[Any] = field(default_factory=list)
    resources: list[Any] = field(default_factory=list)
    resource_templates: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)

    @classmethod
    def of(cls, conn: ServerConnection) -> Listing:
        return cls(list(conn.tools), list(conn.resources), list(conn.resource_templates), list(conn.prompts))


class UserSessions:
    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        credential: Credential,
        make: MakeConnection,
        on_change: Callable[[str], Awaitable[None]],
        init_timeout_s: float,
    ) -> None:
        self.name = name
        self.config = config
        self._credential = credential
        self._make = make
        self._on_change = on_change
        self._init_timeout_s = init_timeout_s
        self._sessions: OrderedDict[str, ServerConnection] = OrderedDict()  # least recently used first
        self._last_used: dict[str, float] = {}
        self._lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None
        self._listings: OrderedDict[str, Listing] = OrderedDict()  # per user, least recently listed first
        self.generation = 0

    # -- what the pool reads ---------------------------------------------------------

    @property
    def tools(self) -> list[Any]:
        return []  # nothing is listed for everyone: see `listing_of`

    @property
    def instructions(self) -> str:
        """The server's instructions, as the most recent session was given them (part of the pins)."""
        return next((s.instructions for s in reversed(self._sessions.values())), "")

    def listing_of(self, user: str) -> Listing | None:
        """What this user's own session listed (None: it has not listed yet)."""
        return self._listings.get(user)

    def listings(self) -> dict[str, Listing]:
        return dict(self._listings)

    @property
    def status(self) -> ServerStatus:
        """The server as a whole: `ready` once a session has listed its tools; before that
        `needs_auth` when users sign in (no user has yet), else `ready` (opened on first use)."""
        transport = self.config.transport or "http"
        if not self.config.enabled:
            return ServerStatus(self.name, "disabled", transport)
        if self._listings or not self.config.user_credential:
            latest = next(reversed(self._sessions.values()), None)  # the version the server spoke last
            return ServerStatus(
                self.name, "ready", transport, protocol_version=latest.protocol_version if latest else None
            )
        return ServerStatus(self.name, "needs_auth", transport, reason="each user connects their own account")

    def session_of(self, user: str) -> ServerConnection | None:
        return self._sessions.get(user)

    @property
    def open_sessions(self) -> int:
        return len(self._sessions)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        if self.config.enabled and self._reaper is None:
            self._reaper = asyncio.create_task(self._reap(), name=f"mcp:{self.name}:idle")

    async def stop(self) -> None:
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            await asyncio.gather(reaper, return_exceptions=True)
        sessions = list(self._sessions.values())
        self._sessions.clear()
        self._listings.clear()
        await asyncio.gather(*(conn.stop() for conn in sessions), return_exceptions=True)

    async def close_user(self, user: str) -> None:
        """Close this user's session (e.g. they disconnected or changed their credential)."""
        conn = self._sessions.pop(user, None)
        self._last_used.pop(user, None)
        if conn is not None:
            await conn.stop()

    async def forget_user(self, user: str) -> None:
        """Close this user's session and forget what it listed (they disconnected)."""
        await self.close_user(user)
        if self._listings.pop(user, None) is not None:
            self.generation += 1
            await self._on_change(user)

    async def _reap(self) -> None:
        interval = min(30.0, self.config.idle_close_s / 4)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            # A session still starting is not idle: its user is waiting for it (on a slow machine
            # a start can take longer than idle_close_s).
            idle = [
                user
                for user, conn in self._sessions.items()
                if not conn.busy
                and conn.status.status != "starting"
                and now - self._last_used.get(user, now) >= self.config.idle_close_s
            ]
            for user in idle:
                log.info(
                    "server %s: closing an idle user session",
                    self.name,
                    extra={"event": "user_session_closed", "server": self.name, "why": "idle"},
                )
                await self.close_user(user)

    # -- sessions ----------------------------------------------------------------------

    async def _on_status(self, conn: ServerConnection) -> None:
        """A user's session is ready, or listed again (list_changed): keep its listing, for them."""
        user = conn.user
        if conn.status.status != "ready" or user is None or self._sessions.get(user) is not conn:
            return
        listing = Listing.of(conn)
        if self._listings.get(user) == listing:
            return
        self._listings[user] = listing
        self._listings.move_to_end(user)
        while len(self._listings) > LISTINGS_PER_SESSION * self.config.max_user_sessions:
            self._listings.popitem(last=False)
        self.generation += 1
        await self._on_change(user)

    async def session_for(self, user: str) -> ServerConnection:
        """The user's ready session, opened on first use."""
        return await self._until_ready(await self.open(user))

    async def open(self, user: str) -> ServerConnection:
        """The user's session, started if it was not open (without waiting for it to be ready)."""
        async with self._lock:
            conn = self._sessions.get(user)
            if conn is None or conn.status.status == "needs_auth":
                if conn is not None:
                    await self.close_user(user)
                headers, auth = await self._credential(user)
                await self._make_room()
                conn = self._make(user, headers, auth)
                self._sessions[user] = conn
                conn.start()
            self._sessions.move_to_end(user)
            self._last_used[user] = time.monotonic()
        return conn

    async def _make_room(self) -> None:
        while len(self._sessions) >= self.config.max_user_sessions:
            victim = next((user for user, conn in self._sessions.items() if not conn.busy), None)
            if victim is None:
                raise ServerUnavailable(
                    f"server '{self.name}' has {len(self._sessions)} user sessions busy (its max_user_sessions); "
                    "try again shortly"
                )
            log.info(
                "server %s: closing the least recently used user session",
                self.name,
                extra={"event": "user_session_closed", "server": self.name, "why": "max_user_sessions"},
            )
            await self.close_user(victim)

    async def _until_ready(self, conn: ServerConnection) -> ServerConnection:
        deadline = time.monotonic() + self._init_timeout_s + 1
        while conn.status.status == "starting" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        status = conn.status
        if status.status == "ready":
            if conn.user is not None and self._sessions.get(conn.user) is conn:
                self._last_used[conn.user] = time.monotonic()  # idle from now, not from when it was opened
            return conn
        if status.status == "needs_auth":
            raise NeedsAuth(f"server '{self.name}' refused your credential: {status.reason}")
        why = f": {status.reason}" if status.reason else ""
        raise ServerUnavailable(f"server '{self.name}' is {status.status} for you{why}")
