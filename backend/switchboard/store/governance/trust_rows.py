"""Tool trust rows (`tool_trust`): one decision per tool, shared by every app process.

The first approval of a tool (a `trust: auto` server's first definition) is insert-if-absent: the
first process to write it wins, as the old pins did. An administrator's decision is written only
if the row is still the version the decision was made on, so of two decisions made at once one
wins and the other is told (`Conflict`)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, select, update

from ...trust_records import TrustRecord
from ..models import tool_trust
from ..repo import ConversationStore

__all__ = ["TrustRows"]


def _record(row: Any) -> TrustRecord:
    return TrustRecord(
        server=row["server"],
        tool=row["tool"],
        state=row["state"],
        pin=row["pin"],
        definition=dict(row["definition"]) if row["definition"] is not None else None,
        version=row["version"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
    )


def _values(record: TrustRecord) -> dict[str, Any]:
    return {
        "state": record.state,
        "pin": record.pin,
        "definition": record.definition,
        "version": record.version,
        "decided_by": record.decided_by,
        "decided_at": record.decided_at or datetime.now(UTC),
    }


class TrustRows:
    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def records(self, server: str | None = None) -> dict[tuple[str, str], TrustRecord]:
        stmt = select(tool_trust)
        if server is not None:
            stmt = stmt.where(tool_trust.c.server == server)

        def work(conn: Connection) -> dict[tuple[str, str], TrustRecord]:
            return {(r["server"], r["tool"]): _record(r) for r in conn.execute(stmt).mappings()}

        return await self._store.read("read the tools' trust", work)

    async def record(self, server: str, tool: str) -> TrustRecord | None:
        stmt = select(tool_trust).where(tool_trust.c.server == server, tool_trust.c.tool == tool)

        def work(conn: Connection) -> TrustRecord | None:
            row = conn.execute(stmt).mappings().first()
            return _record(row) if row is not None else None

        return await self._store.read("read the tool's trust", work)

    async def first(self, record: TrustRecord) -> TrustRecord:
        """Store `record` unless the tool has a row already; the row stored (the first writer's)."""
        stmt = self._store.insert_ignoring_duplicates(
            tool_trust, server=record.server, tool=record.tool, **_values(record)
        )
        stored = select(tool_trust).where(tool_trust.c.server == record.server, tool_trust.c.tool == record.tool)

        def work(conn: Connection) -> TrustRecord:
            conn.execute(stmt)
            return _record(conn.execute(stored).mappings().one())

        return await self._store.transaction("approve the tool", work)

    async def write(self, record: TrustRecord, expected_version: int | None) -> bool:
        """Write `record` if the row is still at `expected_version` (None: there is no row yet).
        False when another decision came first."""
        if expected_version is None:
            stmt: Any = self._store.insert_ignoring_duplicates(
                tool_trust, server=record.server, tool=record.tool, **_values(record)
            )
        else:
            stmt = (
                update(tool_trust)
                .where(
                    tool_trust.c.server == record.server,
                    tool_trust.c.tool == record.tool,
                    tool_trust.c.version == expected_version,
                )
                .values(**_values(record))
            )

        def work(conn: Connection) -> bool:
            return bool(conn.execute(stmt).rowcount == 1)

        return await self._store.transaction("record the decision on the tool", work, single=True)
