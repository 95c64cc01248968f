"""The registries' answers, cached: each (registry, search) is asked at most every `refresh_s`
(5 minutes), however many people browse; after a failure it is asked again after `retry_s`.  A
registry that fails keeps serving its last answer, which then says since when it is stale and
how old it is.  Entries whose status is not `active` are never offered."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import httpx2

from ..errors import NotFound, SwitchboardError
from .client import Fetched, Limits, RegistryClient, RegistryUnavailable
from .entries import BadRegistryData, RegistryEntry

__all__ = ["Listing", "RegistryCatalogue", "RegistryState"]

log = logging.getLogger("switchboard.registries")

MAX_SEARCH_CHARS = 100
FETCHES_AT_ONCE = 4  # requests to one registry at once (pages of one search come one after another)


@dataclass(frozen=True)
class RegistryState:
    """How one registry's part of an answer came to be."""

    url: str
    ok: bool  # the last try succeeded
    fetched_at: float | None = None  # when the answer served was fetched (None: no answer yet)
    age_s: float | None = None
    stale_since: float | None = None  # the first failure since that answer
    error: str | None = None
    truncated: bool = False
    skipped: int = 0  # entries left out because they did not fit server.json

    def as_dict(self) -> dict[str, object]:
        return {
            "url": self.url,
            "ok": self.ok,
            "fetched_at": self.fetched_at,
            "age_s": None if self.age_s is None else round(self.age_s, 1),
            "stale_since": self.stale_since,
            "error": self.error,
            "truncated": self.truncated,
            "skipped": self.skipped,
        }


@dataclass(frozen=True)
class Listing:
    entries: list[RegistryEntry]
    registries: list[RegistryState]


@dataclass
class _Slot:
    answer: Fetched | None = None
    fetched_at: float = 0.0
    tried_at: float | None = None
    error: str | None = None
    refused: BadRegistryData | None = None  # the last failure, when it was the registry's data
    failed_since: float | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class RegistryCatalogue:
    def __init__(
        self,
        urls: Sequence[str],
        *,
        refresh_s: float = 300.0,
        retry_s: float = 30.0,
        limits: Limits | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
        max_keys: int = 256,
    ) -> None:
        self.clients = [RegistryClient(url, limits=limits, transport=transport) for url in urls]
        self.refresh_s, self.retry_s = refresh_s, min(retry_s, refresh_s)
        self._clock = clock
        self._max_keys = max_keys
        self._slots: OrderedDict[tuple[str, str, str], _Slot] = OrderedDict()
        # Searches nobody asked before each go to the registry: a few at a time per registry, so
        # that one user's typing cannot turn this host into a flood the registry then blocks.
        self._outbound = {c.base_url: asyncio.Semaphore(FETCHES_AT_ONCE) for c in self.clients}

    @property
    def urls(self) -> list[str]:
        return [c.base_url for c in self.clients]

    async def search(self, text: str) -> Listing:
        """Active entries whose name, title or description holds `text` (every active entry for
        ""), from every registry, each registry's state beside them."""
        text = " ".join(text.split())[:MAX_SEARCH_CHARS]
        results = await asyncio.gather(*(self._listing(client, text) for client in self.clients))
        entries = [e for found, _ in results for e in found]
        return Listing(entries, [state for _, state in results])

    async def entry(self, name: str) -> RegistryEntry:
        """The latest version of an active entry, from the first registry that knows it: what an
        install uses.  NotFound when none does; RegistryUnavailable when a registry that might
        could not be asked (and had no earlier answer)."""
        failures: list[str] = []
        for client in self.clients:
            slot = await self._fresh(("latest", client.base_url, name), functools.partial(_one, client, name))
            if slot.answer is None:
                if slot.refused is not None:
                    raise slot.refused  # bad data: said as it is (400), nothing to install
                failures.append(slot.error or "no answer")
                continue
            for found in slot.answer.entries:
                if found.active:
                    return found
        if failures:
            raise RegistryUnavailable(f"'{name}' could not be looked up: {'; '.join(failures)}")
        raise NotFound(f"no registry offers an active server named '{name}'")

    async def _listing(self, client: RegistryClient, text: str) -> tuple[list[RegistryEntry], RegistryState]:
        slot = await self._fresh(("list", client.base_url, text.lower()), lambda: client.list(text))
        now = self._clock()
        answer = slot.answer
        state = RegistryState(
            url=client.base_url,
            ok=slot.error is None,
            fetched_at=slot.fetched_at if answer else None,
            age_s=now - slot.fetched_at if answer else None,
            stale_since=slot.failed_since if answer and slot.error else None,
            error=slot.error,
            truncated=bool(answer and answer.truncated),
            skipped=answer.skipped if answer else 0,
        )
        needle = text.lower()
        entries = [e for e in (answer.entries if answer else []) if e.active and (not needle or needle in _haystack(e))]
        return _latest_only(entries), state

    async def _fresh(self, key: tuple[str, str, str], fetch: Callable[[], Awaitable[Fetched]]) -> _Slot:
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot()
            while len(self._slots) > self._max_keys:
                self._slots.popitem(last=False)
        self._slots.move_to_end(key)
        if not self._due(slot):
            return slot
        async with slot.lock:  # one refresh at a time; the others wait for it and take its answer
            if not self._due(slot):
                return slot
            now = self._clock()
            try:
                async with self._outbound[key[1]]:
                    answer = await fetch()
            except SwitchboardError as exc:
                slot.error = exc.message
                slot.refused = exc if isinstance(exc, BadRegistryData) else None
                slot.failed_since = slot.failed_since or now
                log.warning(
                    "registry %s: %s", key[1], exc.message, extra={"event": "registry_failed", "registry": key[1]}
                )
            else:
                slot.answer, slot.fetched_at = answer, now
                slot.error = slot.failed_since = slot.refused = None
            slot.tried_at = now  # only now: who asks meanwhile waits for this answer
        return slot

    def _due(self, slot: _Slot) -> bool:
        if slot.tried_at is None:
            return True
        wait = self.retry_s if slot.error else self.refresh_s
        return self._clock() - slot.tried_at >= wait


async def _one(client: RegistryClient, name: str) -> Fetched:
    found = await client.latest(name)
    return Fetched([] if found is None else [found])


def _haystack(entry: RegistryEntry) -> str:
    server = entry.server
    return f"{server.name} {server.title or ''} {server.description}".lower()


def _latest_only(entries: list[RegistryEntry]) -> list[RegistryEntry]:
    """One entry per name (a registry that ignores `version=latest` lists every version)."""
    chosen: dict[str, RegistryEntry] = {}
    for entry in entries:
        seen = chosen.get(entry.name)
        if seen is None or (entry.is_latest and not seen.is_latest):
            chosen[entry.name] = entry
    return list(chosen.values())
