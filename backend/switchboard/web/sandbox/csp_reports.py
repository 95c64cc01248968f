"""How much `POST /csp-report` (on the sandbox origin) may write to the log.

The browser sends a report there whenever an app's policy refuses something, without any
sign-in, so anyone who reaches the port can post too. Per client address and minute, at most
`per_client` reports are taken (more: 429, not read), an identical report (same directive and
blocked address) is logged once, and at most `bytes_per_client` of report text is logged; across
all clients at most `overall` reports are logged a minute. What a minute dropped is said in one
log line (`app_csp_reports_dropped`) when the next report comes. Per process. The address is
the one uvicorn reports: behind a reverse proxy that is not on this machine, the proxy's own, so
the limits are then the site's; the overall cap holds however many addresses a client uses.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["CspReportLimiter"]

WINDOW_S = 60.0


@dataclass(slots=True)
class _Client:
    since: float
    requests: int = 0
    logged_bytes: int = 0
    seen: set[tuple[str, str]] = field(default_factory=set)


class CspReportLimiter:
    def __init__(
        self,
        *,
        per_client: int = 30,
        bytes_per_client: int = 4096,
        overall: int = 300,
        clients: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_client, self.bytes_per_client, self.overall = per_client, bytes_per_client, overall
        self._max_clients = clients
        self._clock = clock
        self._clients: OrderedDict[str, _Client] = OrderedDict()
        self._since = clock()
        self._logged = 0
        self.dropped = 0  # since the last summary

    def roll(self) -> int:
        """Starts a new minute when the last one is over; returns how many reports the finished
        one dropped (0 while it lasts), for the summary line."""
        now = self._clock()
        if now - self._since < WINDOW_S:
            return 0
        dropped, self.dropped, self._logged, self._since = self.dropped, 0, 0, now
        return dropped

    def admit(self, client: str) -> bool:
        """Whether this client's report may be read at all (its rate)."""
        entry = self._client(client)
        entry.requests += 1
        if entry.requests > self.per_client:
            self.dropped += 1
            return False
        return True

    def take(self, client: str, directive: str, uri: str) -> bool:
        """Whether a report that was read is logged: not a repeat, within the client's bytes and
        the overall count."""
        entry = self._client(client)
        size = len(directive) + len(uri)
        if (
            (directive, uri) in entry.seen
            or entry.logged_bytes + size > self.bytes_per_client
            or self._logged >= self.overall
        ):
            self.dropped += 1
            return False
        entry.seen.add((directive, uri))
        entry.logged_bytes += size
        self._logged += 1
        return True

    def _client(self, client: str) -> _Client:
        now = self._clock()
        entry = self._clients.get(client)
        if entry is None or now - entry.since >= WINDOW_S:
            entry = self._clients[client] = _Client(since=now)
        self._clients.move_to_end(client)
        while len(self._clients) > self._max_clients:  # the longest quiet ones go; they start afresh
            self._clients.popitem(last=False)
        return entry
