"""MCP 2026-07-28 on one connection: change events through `subscriptions/listen`, and the
servers' cache hints (`ttlMs`, `cacheScope`) for lists and resource reads.

- Lists are cached by the MCP client itself (`CacheConfig`); reads by `ReadCache`, since the
  client caches lists only. A change event evicts both (the client's own handler evicts its
  lists; `ReadCache.forget` the reads).
- A `private` result is never shared between users: a shared connection (one session for
  every user) keeps only `public` results; a per-user connection keeps its user's own.
- `listen` holds one subscription open while the connection lives. Its events also reach the
  connection's message handler as notifications, which lists again and tells the pages
  (`catalogue_changed`); this task keeps the stream open and opens it again if it drops.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from typing import Any

import mcp_types
from mcp.client import CacheConfig, CacheEntry, CacheKey, InMemoryResponseCacheStore
from mcp.client.subscriptions import SubscriptionLost, listen
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp import MCPError

__all__ = ["ReadCache", "keep_listening", "list_cache"]

log = logging.getLogger("switchboard.tools")

RELISTEN_DELAYS_S = (0.5, 2.0, 5.0, 15.0, 60.0)


class _PublicOnlyStore(InMemoryResponseCacheStore):
    """The store of a shared connection: what the server marked `private` is not kept."""

    async def set(self, key: CacheKey, entry: CacheEntry) -> None:
        if entry.scope == "public":
            await super().set(key, entry)


def list_cache(server: str, user: str | None) -> CacheConfig:
    store = _PublicOnlyStore() if user is None else InMemoryResponseCacheStore()
    return CacheConfig(store=store, partition=user or "shared", target_id=server)


class ReadCache:
    """Resource reads kept for the `ttlMs` the server gave, within the sharing its
    `cacheScope` allows. Counts what it saved (`hits`)."""

    def __init__(self, *, shared: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self._shared = shared
        self._clock = clock
        self._entries: dict[str, tuple[float, mcp_types.ReadResourceResult]] = {}
        self.hits = 0

    def get(self, uri: str) -> mcp_types.ReadResourceResult | None:
        entry = self._entries.get(uri)
        if entry is None:
            return None
        expires, result = entry
        if self._clock() >= expires:
            del self._entries[uri]
            return None
        self.hits += 1
        return copy.deepcopy(result)

    def put(self, uri: str, result: mcp_types.ReadResourceResult) -> None:
        ttl_ms = result.ttl_ms or 0
        if ttl_ms <= 0 or (self._shared and result.cache_scope != "public"):
            return
        self._entries[uri] = (self._clock() + ttl_ms / 1000, copy.deepcopy(result))

    def forget(self, message: Any) -> None:
        """Drop what a server's change notification makes stale."""
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            self._entries.pop(message.params.uri, None)
        elif isinstance(message, mcp_types.ResourceListChangedNotification):
            self._entries.clear()


async def keep_listening(name: str, session: Any, uris: Callable[[], list[str]]) -> None:
    """Hold `subscriptions/listen` open on a 2026-07-28 session (lists and the listed
    resources); a dropped stream is opened again. Returns at once on older sessions, and
    when the server does not serve `subscriptions/listen`."""
    if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return
    caps = session.server_capabilities
    failures = 0
    while True:
        try:
            async with listen(
                session,
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=caps is None or caps.resources is not None,
                resource_subscriptions=uris(),
            ) as subscription:
                failures = 0
                async for _event in subscription:  # the message handler acts on each one
                    pass
                return  # the server closed the stream: it has nothing more to say
        except MCPError as exc:
            if exc.code == mcp_types.METHOD_NOT_FOUND:
                log.info("server %s does not serve subscriptions/listen", name)
                return
            why: str = exc.message
        except (SubscriptionLost, TimeoutError) as exc:
            why = str(exc)
        delay = RELISTEN_DELAYS_S[min(failures, len(RELISTEN_DELAYS_S) - 1)]
        failures += 1
        log.info("server %s: listening again in %g s (%s)", name, delay, why)
        await asyncio.sleep(delay)
