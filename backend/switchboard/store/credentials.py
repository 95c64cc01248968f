"""Rows of users' own credentials for MCP servers.  Values arrive encrypted
(see ``switchboard.credentials``); this module never sees a credential in clear."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from ._base import StoreBase
from .models import user_credentials

__all__ = ["CredentialRecords"]


class CredentialRecords(StoreBase):
    async def get(self, server: str, user: str, kind: str) -> str | None:
        table = user_credentials
        stmt = select(table.c.value).where(table.c.server == server, table.c.user == user, table.c.kind == kind)
        async with self._read("read a stored credential") as conn:
            return (await conn.execute(stmt)).scalar_one_or_none()

    async def put(self, server: str, user: str, kind: str, value: str) -> None:
        values = {"value": value, "updated_at": datetime.now(UTC)}
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        stmt = dialect_insert(user_credentials).values(server=server, user=user, kind=kind, **values)
        stmt = stmt.on_conflict_do_update(index_elements=[user_credentials.c.server, user_credentials.c.user,
                                                          user_credentials.c.kind], set_=values)  # fmt: skip
        async with self._write("store a credential") as conn:
            await conn.execute(stmt)

    async def forget(self, server: str, user: str) -> None:
        table = user_credentials
        async with self._write("forget a credential") as conn:
            await conn.execute(delete(table).where(table.c.server == server, table.c.user == user))
