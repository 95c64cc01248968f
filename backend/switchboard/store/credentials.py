"""Rows of users' own credentials for MCP servers, and of pending OAuth sign-ins.  Values
arrive encrypted (see ``switchboard.credentials``); this module never sees a credential in clear."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, delete, or_, select
from sqlalchemy.dialects import postgresql, sqlite

from .models import oauth_pending, user_credentials
from .repo import ConversationStore

__all__ = ["CredentialRecords"]


def _state_hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


class CredentialRecords:
    """The credential tables, through the conversation store's transactions and error translation."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def get(self, server: str, user: str, kind: str) -> str | None:
        table = user_credentials
        stmt = select(table.c.value).where(table.c.server == server, table.c.user == user, table.c.kind == kind)
        return await self._store.read("read a stored credential", lambda conn: conn.execute(stmt).scalar_one_or_none())

    async def put(self, server: str, user: str, kind: str, value: str) -> None:
        values = {"value": value, "updated_at": datetime.now(UTC)}
        dialect_insert = postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert
        stmt = dialect_insert(user_credentials).values(server=server, user=user, kind=kind, **values)
        stmt = stmt.on_conflict_do_update(
            index_elements=[user_credentials.c.server, user_credentials.c.user, user_credentials.c.kind], set_=values
        )
        await self._store.transaction("store a credential", lambda conn: conn.execute(stmt), single=True)

    async def forget(self, server: str, user: str, kinds: Collection[str] | None = None) -> None:
        table = user_credentials
        stmt = delete(table).where(table.c.server == server, table.c.user == user)
        if kinds is not None:
            stmt = stmt.where(table.c.kind.in_(list(kinds)))
        await self._store.transaction("forget a credential", lambda conn: conn.execute(stmt), single=True)

    async def put_pending(self, state: str, server: str, user: str, value: str, *, max_age_s: float) -> None:
        """One pending sign-in per (server, user): the older one and every expired one go."""
        table, now = oauth_pending, datetime.now(UTC)

        def work(conn: Connection) -> None:
            conn.execute(
                delete(table).where(
                    or_(
                        (table.c.server == server) & (table.c.user == user),
                        table.c.created_at < now - timedelta(seconds=max_age_s),
                    )
                )
            )
            conn.execute(
                table.insert().values(
                    state_hash=_state_hash(state), server=server, user=user, value=value, created_at=now
                )
            )

        await self._store.transaction("keep a pending sign-in", work)

    async def take_pending(self, state: str) -> tuple[str, str, str, datetime] | None:
        """The row of this state, deleted in the same statement: two callbacks cannot both take it."""
        table = oauth_pending
        stmt = (
            delete(table)
            .where(table.c.state_hash == _state_hash(state))
            .returning(table.c.server, table.c.user, table.c.value, table.c.created_at)
        )
        row = await self._store.transaction(
            "take a pending sign-in", lambda conn: conn.execute(stmt).first(), single=True
        )
        return None if row is None else (row.server, row.user, row.value, row.created_at)
