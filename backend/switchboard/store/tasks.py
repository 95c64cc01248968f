"""Task rows: calls a server runs in the background, with the lease that says which process
polls each (``lease_owner`` until ``lease_until``; an expired lease is free to take)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, func, insert, or_, select, text, update

from .models import tasks
from .repo import ConversationStore

__all__ = ["ACTIVE", "TaskRecord", "TaskRecords"]

ACTIVE = ("working", "input_required")  # still the server's to finish


@dataclass(frozen=True, slots=True)
class TaskRecord:
    id: str
    task_id: str
    owner: str
    conversation_id: str
    server: str
    tool: str
    call_id: str
    status: str
    progress: float | None
    message: str | None
    result: dict[str, Any] | None
    poll_interval_ms: int | None
    created_at: datetime
    updated_at: datetime

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


def _record(row: Any) -> TaskRecord:
    return TaskRecord(**{name: row[name] for name in TaskRecord.__slots__})


class TaskRecords:
    """The `tasks` table, through the conversation store's engine and error translation."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def add(
        self,
        *,
        id: str,
        task_id: str,
        owner: str,
        conversation_id: str,
        server: str,
        tool: str,
        call_id: str,
        status: str,
        message: str | None,
        poll_interval_ms: int | None,
        lease_owner: str,
        lease_s: float,
        most_active: int | None = None,
    ) -> TaskRecord | None:
        """The task stored; None (nothing stored) when the owner has `most_active` active tasks
        already. The count and the insert are one transaction, taken in turn per owner, so calls
        made at once (a round of them, several processes) cannot pass the limit together."""
        now = datetime.now(UTC)
        row = {
            "id": id,
            "task_id": task_id,
            "owner": owner,
            "conversation_id": conversation_id,
            "server": server,
            "tool": tool,
            "call_id": call_id,
            "status": status,
            "progress": None,
            "message": message,
            "result": None,
            "poll_interval_ms": poll_interval_ms,
            "created_at": now,
            "updated_at": now,
        }
        stmt = insert(tasks).values(**row, lease_owner=lease_owner, lease_until=now + timedelta(seconds=lease_s))
        if most_active is None:
            await self._store.transaction("save the task", lambda conn: conn.execute(stmt), single=True)
            return _record(row)
        postgres = self._store.dialect == "postgresql"  # (SQLite: writers take turns already)
        active = select(func.count()).select_from(tasks).where(tasks.c.owner == owner, tasks.c.status.in_(ACTIVE))

        def work(conn: Connection) -> bool:
            if postgres:
                conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:owner))"), {"owner": f"tasks:{owner}"})
            if conn.execute(active).scalar_one() >= most_active:
                return False
            conn.execute(stmt)
            return True

        return _record(row) if await self._store.transaction("save the task", work) else None

    async def active_of(self, owner: str) -> int:
        """How many of the owner's tasks are still running."""
        stmt = select(func.count()).select_from(tasks).where(tasks.c.owner == owner, tasks.c.status.in_(ACTIVE))
        return await self._store.read("count your tasks", lambda conn: conn.execute(stmt).scalar_one())

    async def get(self, id: str) -> TaskRecord | None:
        def work(conn: Connection) -> TaskRecord | None:
            row = conn.execute(select(tasks).where(tasks.c.id == id)).mappings().first()
            return _record(row) if row is not None else None

        return await self._store.read("read the task", work)

    async def of_owner(self, owner: str, conversation_id: str | None = None, limit: int = 100) -> list[TaskRecord]:
        stmt = select(tasks).where(tasks.c.owner == owner)
        if conversation_id is not None:
            stmt = stmt.where(tasks.c.conversation_id == conversation_id)
        stmt = stmt.order_by(tasks.c.created_at.desc(), tasks.c.id.desc()).limit(limit)
        return await self._store.read(
            "list your tasks", lambda conn: [_record(r) for r in conn.execute(stmt).mappings()]
        )

    async def update(self, id: str, **values: Any) -> None:
        values["updated_at"] = datetime.now(UTC)
        stmt = update(tasks).where(tasks.c.id == id).values(**values)
        await self._store.transaction("save the task's state", lambda conn: conn.execute(stmt), single=True)

    async def lease(self, owner: str, lease_s: float, limit: int = 1000) -> list[TaskRecord]:
        """Take (or keep) the lease on active tasks that no other process holds; returns the tasks
        this process now holds."""
        now = datetime.now(UTC)
        free = or_(tasks.c.lease_until.is_(None), tasks.c.lease_until < now, tasks.c.lease_owner == owner)
        active = and_(tasks.c.status.in_(ACTIVE), free)

        def work(conn: Connection) -> list[TaskRecord]:
            ids = [r[0] for r in conn.execute(select(tasks.c.id).where(active).limit(limit))]
            if not ids:
                return []
            conn.execute(
                update(tasks)
                .where(tasks.c.id.in_(ids), free)
                .values(lease_owner=owner, lease_until=now + timedelta(seconds=lease_s))
            )
            rows = conn.execute(select(tasks).where(tasks.c.id.in_(ids), tasks.c.lease_owner == owner))
            return [_record(row) for row in rows.mappings()]

        return await self._store.transaction("take the lease on tasks", work)

    async def release(self, owner: str) -> None:
        """Give up this process's leases (shutdown): another process may take them at once."""
        stmt = update(tasks).where(tasks.c.lease_owner == owner).values(lease_owner=None, lease_until=None)
        await self._store.transaction("release the task leases", lambda conn: conn.execute(stmt), single=True)
