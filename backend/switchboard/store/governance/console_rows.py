"""The admin console's rows: the servers it added or switched on and off (`console_servers`), and
the users the host has seen (`users_seen`). An edit names the version it was made against: one
made against an older version (another administrator's edit came first) or against a row that is
gone (removed meanwhile) changes nothing and says which."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from ...errors import Conflict, NotFound
from ..models import api_tokens, console_servers, users_seen
from ..repo import ConversationStore

__all__ = ["ConsoleRecords", "ConsoleRow", "SeenUser"]


@dataclass(frozen=True, slots=True)
class ConsoleRow:
    name: str
    source: str  # "admin" | "config"
    entry: dict[str, Any] | None  # an admin server's mcp.json entry; None for a config-file server
    enabled: bool
    trust: str | None
    version: int
    updated_by: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SeenUser:
    email: str
    groups: dict[str, str]  # group -> where it comes from
    first_seen: datetime
    last_seen: datetime


def _row(row: Any) -> ConsoleRow:
    return ConsoleRow(**{key: row[key] for key in ConsoleRow.__slots__})


class ConsoleRecords:
    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def servers(self) -> list[ConsoleRow]:
        stmt = select(console_servers).order_by(console_servers.c.name)
        return await self._store.read(
            "read the console's servers", lambda conn: [_row(r) for r in conn.execute(stmt).mappings()]
        )

    async def add(self, row: ConsoleRow) -> None:
        """A new row; Conflict when one of that name exists (another administrator was quicker)."""
        table = console_servers

        def work(conn: Connection) -> None:
            if conn.execute(select(table.c.name).where(table.c.name == row.name)).first() is not None:
                raise Conflict(f"a server named '{row.name}' exists already", action="Choose another name.")
            conn.execute(insert(table).values(**{key: getattr(row, key) for key in ConsoleRow.__slots__}))

        await self._store.transaction("save the server", work)

    async def put(self, row: ConsoleRow, *, expected: int | None) -> None:
        """Write `row` over the version `expected` (None: there is no row yet, for a config-file
        server switched off the first time). The check and the write are one transaction."""
        table = console_servers

        def work(conn: Connection) -> None:
            found = conn.execute(select(table.c.version).where(table.c.name == row.name)).scalar_one_or_none()
            if found is None and expected is not None:
                raise NotFound(f"the server '{row.name}' was removed meanwhile", action="Reload the list.")
            if found != expected:
                raise Conflict(
                    f"the server '{row.name}' was changed meanwhile by someone else",
                    action="Reload the list and make your change again.",
                )
            values = {key: getattr(row, key) for key in ConsoleRow.__slots__}
            if found is None:
                conn.execute(insert(table).values(**values))
            else:
                conn.execute(update(table).where(table.c.name == row.name).values(**values))

        await self._store.transaction("save the server", work)

    async def remove(self, name: str, *, expected: int | None = None) -> None:
        table = console_servers
        stmt = delete(table).where(table.c.name == name)
        if expected is not None:
            stmt = stmt.where(table.c.version == expected)

        def work(conn: Connection) -> None:
            if conn.execute(stmt).rowcount == 0:
                raise NotFound(f"the server '{name}' was removed meanwhile", action="Reload the list.")

        await self._store.transaction("remove the server", work)

    async def seen(self, email: str, groups: dict[str, str], now: datetime | None = None) -> None:
        table, now = users_seen, now or datetime.now(UTC)

        def work(conn: Connection) -> None:
            changed = conn.execute(
                update(table).where(table.c.email == email).values(groups=groups, last_seen=now)
            ).rowcount
            if not changed:
                conn.execute(insert(table).values(email=email, groups=groups, first_seen=now, last_seen=now))

        await self._store.transaction("note the user", work)

    async def users(self) -> list[SeenUser]:
        stmt = select(users_seen).order_by(users_seen.c.email)
        return await self._store.read(
            "list the users",
            lambda conn: [
                SeenUser(r["email"], dict(r["groups"]), r["first_seen"], r["last_seen"])
                for r in conn.execute(stmt).mappings()
            ],
        )

    async def tokens(self) -> dict[str, list[dict[str, Any]]]:
        """Every API token (never its secret), by owner."""
        stmt = select(
            api_tokens.c.id, api_tokens.c.owner, api_tokens.c.name, api_tokens.c.created_at, api_tokens.c.last_used_at
        ).order_by(api_tokens.c.created_at)

        def work(conn: Connection) -> dict[str, list[dict[str, Any]]]:
            found: dict[str, list[dict[str, Any]]] = {}
            for row in conn.execute(stmt).mappings():
                found.setdefault(row["owner"], []).append(
                    {k: row[k] for k in ("id", "name", "created_at", "last_used_at")}
                )
            return found

        return await self._store.read("list the API tokens", work)

    async def revoke_tokens(self, owner: str) -> int:
        """Delete every API token of `owner`: each request checks its token in the store, so this
        counts at once on every process."""
        stmt = delete(api_tokens).where(api_tokens.c.owner == owner)
        return await self._store.transaction(
            "revoke the API tokens", lambda conn: conn.execute(stmt).rowcount, single=True
        )
