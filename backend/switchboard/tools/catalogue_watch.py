"""Who hears that a server's catalogue changed: its tools, resources or prompts were
listed again (`notifications/*/list_changed`), or it started, stopped, failed or was
reloaded.  The web layer forwards this to the open pages so they list the tools again.
`RELOADED` (not a server name) says the whole configuration was reloaded: groups,
models and servers may all have changed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

__all__ = ["RELOADED", "CatalogueWatch"]

RELOADED = ""

_PENDING = 256  # a listener this far behind has enough to refresh on; more is dropped


class CatalogueWatch:
    def __init__(self) -> None:
        self._listeners: set[asyncio.Queue[str]] = set()

    def changed(self, server: str) -> None:
        for queue in self._listeners:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(server)

    def reloaded(self) -> None:
        self.changed(RELOADED)

    @contextlib.contextmanager
    def listen(self) -> Iterator[asyncio.Queue[str]]:
        """A queue of the names of servers whose catalogue changed, while the block runs."""
        queue: asyncio.Queue[str] = asyncio.Queue(_PENDING)
        self._listeners.add(queue)
        try:
            yield queue
        finally:
            self._listeners.discard(queue)
