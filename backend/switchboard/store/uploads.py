"""Upload rows: one per stored upload (id, owner, size), so that every app process checks a user's
quota against the same figures. A reservation counts and inserts in one transaction, one user at
a time (Postgres: an advisory lock on the user; SQLite: its one writer), so two uploads through
two processes cannot pass the quota together. Removing a row is idempotent: two processes that
purge the same old file count it once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from sqlalchemy import Connection, delete, func, insert, select, text

from .models import uploads
from .repo import ConversationStore

__all__ = ["UploadRows"]


class UploadRows:
    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def reserve(self, owner: str, file_id: str, size: int, check: Callable[[int, int], None]) -> None:
        """Count this upload if `check(bytes, files)` of the user's uploads so far does not raise."""
        postgres = self._store.dialect == "postgresql"

        def work(conn: Connection) -> None:
            if postgres:
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:owner))"), {"owner": owner})
            used, count = conn.execute(
                select(func.coalesce(func.sum(uploads.c.size), 0), func.count()).where(uploads.c.owner == owner)
            ).one()
            check(int(used), int(count))
            conn.execute(insert(uploads).values(id=file_id, owner=owner, size=size, created_at=datetime.now(UTC)))

        await self._store.transaction("count your uploads", work)

    async def release(self, file_id: str) -> None:
        stmt = delete(uploads).where(uploads.c.id == file_id)
        await self._store.transaction("count your uploads", lambda c: c.execute(stmt), single=True)

    async def usage(self, owner: str) -> tuple[int, int]:
        stmt = select(func.coalesce(func.sum(uploads.c.size), 0), func.count()).where(uploads.c.owner == owner)
        used, count = await self._store.read("count your uploads", lambda c: tuple(c.execute(stmt).one()))
        return int(used), int(count)

    async def add_missing(self, stored: Iterable[tuple[str, str, int]]) -> None:
        """Rows for uploads stored before they were counted here: (id, owner, size) each."""
        rows = [{"id": i, "owner": o, "size": s, "created_at": datetime.now(UTC)} for i, o, s in stored]
        if not rows:
            return
        stmt = self._store.insert_ignoring_duplicates(uploads)
        await self._store.transaction("count your uploads", lambda c: c.execute(stmt, rows))
