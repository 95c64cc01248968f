"""The app's side of the audit log: `record(kind, **fields)` (the one entry point; it never waits
and never fails the caller), and the task that writes what was recorded, batched, in order, with
a checkpoint every 1,000 records, every 5 minutes and when the app stops.

A record waits in memory while the store is down or slow, so a turn never waits for the audit
log longer than it waits for the store already (it does not wait at all). If more than
`MAX_WAITING` pile up, the oldest are dropped, and a record `audit_records_lost` says how many
as soon as the log can be written again."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..errors import SwitchboardError
from ..store.governance.audit_log import AuditStore, Checkpoint, Pending
from .chain import arguments_digest, now_ts
from .keys import public_text

__all__ = ["AuditSettings", "Auditor"]

log = logging.getLogger("switchboard.audit")
MAX_WAITING = 100_000
BATCH = 1000


@dataclass(frozen=True, slots=True)
class AuditSettings:
    full_arguments: bool = False  # SWITCHBOARD_AUDIT_ARGUMENTS=full
    retention_days: float | None = None
    checkpoint_every: int = 1000
    checkpoint_interval_s: float = 300.0
    prune_interval_s: float = 3600.0


class Auditor:
    def __init__(self, key: Ed25519PrivateKey, settings: AuditSettings | None = None) -> None:
        self.key = key
        self.settings = settings or AuditSettings()
        self.public_key = public_text(key)
        self.store: AuditStore | None = None
        self._waiting: deque[Pending] = deque()
        self._lost = 0
        self._seen: set[str] = set()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._written_since_checkpoint = False
        self._closing = False

    def use(self, store: AuditStore) -> None:
        self.store = store
        self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="audit-writer")

    def record(self, kind: str, **fields: Any) -> None:
        """One record (written soon, in the order recorded). `user`, `server`, `tool` and
        `decision` are the fields the admin route filters on."""
        self._add(Pending(now_ts(), {"kind": kind, **{k: v for k, v in fields.items() if v is not None}}))

    def user_seen(self, email: str) -> None:
        """A user's first request: one `user_seen` record per deployment (checked when written)."""
        if email not in self._seen:
            self._seen.add(email)
            self._add(Pending(now_ts(), {"kind": "user_seen", "user": email}, once=True))

    def arguments(self, arguments: Any) -> dict[str, Any]:
        """A call's arguments as the record keeps them: a digest, or (audit_arguments=full) whole."""
        if self.settings.full_arguments:
            return {"arguments": arguments}
        return {"arguments_sha256": arguments_digest(arguments)}

    def _add(self, pending: Pending) -> None:
        self._waiting.append(pending)
        if len(self._waiting) > MAX_WAITING:
            self._waiting.popleft()
            self._lost += 1
        self._idle.clear()
        self._wake.set()

    async def flush(self, timeout_s: float = 5.0) -> None:
        """Until everything recorded so far is written, or `timeout_s` (the store may be down)."""
        if self._task is None or self._task.done():
            await self._write_waiting()
            return
        self._wake.set()
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            pass

    async def close(self) -> None:
        """Write what waits, then a checkpoint of the chain's end."""
        self._closing = True
        if self._task is not None:
            self._wake.set()
            await self._task  # (it ends after its write: never cancelled inside one)
            self._task = None
        else:
            await self._write_waiting()
        await self._checkpoint()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        interval = self.settings.checkpoint_interval_s
        next_checkpoint, next_prune = loop.time() + interval, loop.time()
        delay = 1.0
        while True:
            await self._sleep(next_checkpoint - loop.time())
            ok = await self._write_waiting()
            if self._closing:
                return
            now = loop.time()
            if not ok:  # the store failed: try again later (the records keep waiting)
                await self._sleep(delay)
                delay = min(delay * 2, 30.0)
                self._wake.set()
                continue
            delay = 1.0
            if now >= next_checkpoint:
                await self._checkpoint()
                next_checkpoint = now + interval
            if self.settings.retention_days is not None and now >= next_prune:
                await self.prune()
                next_prune = now + self.settings.prune_interval_s

    async def _sleep(self, seconds: float) -> None:
        """Until woken (a record, or the app stopping), or `seconds`."""
        try:
            async with asyncio.timeout(max(0.0, seconds)):
                await self._wake.wait()
        except TimeoutError:
            pass
        self._wake.clear()

    async def _write_waiting(self) -> bool:
        store = self.store
        try:
            while self._waiting and store is not None:
                if self._lost:
                    lost, self._lost = self._lost, 0
                    self._waiting.appendleft(Pending(now_ts(), {"kind": "audit_records_lost", "count": lost}))
                batch = [self._waiting[i] for i in range(min(BATCH, len(self._waiting)))]
                try:
                    _, made = await store.append(batch)
                except SwitchboardError as exc:
                    log.error(
                        "audit records could not be written: %s (%d wait)",
                        exc.message,
                        len(self._waiting),
                        extra={"event": "audit_write_failed", "waiting": len(self._waiting)},
                    )
                    return False
                for _ in batch:
                    self._waiting.popleft()
                self._written_since_checkpoint = True
                self._log_checkpoints(made)
            return True
        finally:
            if not self._waiting or store is None:
                self._idle.set()

    async def _checkpoint(self) -> None:
        if self.store is None or not self._written_since_checkpoint:
            return
        try:
            made = await self.store.checkpoint()
        except SwitchboardError as exc:
            log.error("audit checkpoint failed: %s", exc.message, extra={"event": "audit_checkpoint_failed"})
            return
        self._written_since_checkpoint = False
        self._log_checkpoints([made] if made else [])

    @staticmethod
    def _log_checkpoints(made: list[Checkpoint]) -> None:
        for cp in made:  # a copy outside the database: the app log holds every checkpoint too
            log.info(
                "audit checkpoint %d",
                cp.seq,
                extra={
                    "event": "audit_checkpoint",
                    "seq": cp.seq,
                    "hash": cp.hash,
                    "ts": cp.ts,
                    "signature": cp.signature,
                },
            )

    async def prune(self, now: datetime | None = None) -> int | None:
        days = self.settings.retention_days
        if self.store is None or days is None:
            return None
        now = now or datetime.now(UTC)
        try:
            boundary = await self.store.prune(now - timedelta(days=days), now_ts())
        except SwitchboardError as exc:
            log.error("audit prune failed: %s", exc.message, extra={"event": "audit_prune_failed"})
            return None
        if boundary is not None:
            log.info("audit log pruned through %d", boundary, extra={"event": "audit_pruned", "through_seq": boundary})
        return boundary
