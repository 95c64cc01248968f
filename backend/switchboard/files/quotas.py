"""Upload quotas counted in the conversation store (`store/uploads.py`), for the file store's
worker threads (`artifacts.UploadCounts`): each call runs on the app's event loop and the thread
waits for it. The uploads stored before counting began are added once per process, on first use
(the same scan a process's own counter made)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from ..errors import SwitchboardError
from ..store.uploads import UploadRows
from .artifacts import Usage, check_quota

__all__ = ["StoreCounts"]

log = logging.getLogger("switchboard")
WAIT_S = 60.0
T = TypeVar("T")


class StoreCounts:
    def __init__(
        self, rows: UploadRows, loop: asyncio.AbstractEventLoop, scan: Callable[[], Iterator[tuple[str, str, int]]]
    ) -> None:
        self._rows, self._loop, self._scan = rows, loop, scan
        self._seeded = False
        self._seeding = threading.Lock()
        self._removing: set[asyncio.Task[None]] = set()

    def _wait(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(WAIT_S)

    def _seed(self) -> None:
        with self._seeding:
            if not self._seeded:
                self._wait(self._rows.add_missing(list(self._scan())))
                self._seeded = True

    def reserve(self, owner: str, file_id: str, size: int, *, max_bytes: int, max_files: int) -> None:
        self._seed()

        def check(used: int, count: int) -> None:
            check_quota(Usage(used, count), size, max_bytes=max_bytes, max_files=max_files)

        self._wait(self._rows.reserve(owner, file_id, size, check))

    def release(self, owner: str, file_id: str, size: int) -> None:
        """Never waits: a removal may come from the loop's own thread (a turn's files)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._remove, file_id)

    def _remove(self, file_id: str) -> None:
        task = self._loop.create_task(self._released(file_id))
        self._removing.add(task)
        task.add_done_callback(self._removing.discard)

    async def _released(self, file_id: str) -> None:
        try:
            await self._rows.release(file_id)
        except SwitchboardError as exc:  # the row stays: the user's quota errs on the safe side
            log.warning("could not uncount a removed upload: %s", exc.message, extra={"event": "upload_uncount_failed"})

    def usage(self, owner: str) -> Usage:
        self._seed()
        used, count = self._wait(self._rows.usage(owner))
        return Usage(used, count)
