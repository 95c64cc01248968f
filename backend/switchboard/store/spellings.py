"""The spellings a user's address had before addresses were normalized (migration 0007), kept for
one reason: a conversation id a client picked is stored under a hash of the owner's address and
the name (`chat.conversations.scoped_id`), and the hash cannot be recomputed for a new spelling."""

from __future__ import annotations

from sqlalchemy import Connection, select

from ._base import StoreBase
from .models import owner_spellings

__all__ = ["OwnerSpellings"]


class OwnerSpellings(StoreBase):
    async def old_spellings(self, owner: str) -> list[str]:
        """The addresses `owner`'s named conversations were stored under before 0007 (mostly none)."""

        def work(conn: Connection) -> list[str]:
            query = select(owner_spellings.c.spelling).where(owner_spellings.c.owner == owner)
            return list(conn.execute(query).scalars().all())

        return await self._run("read the user's earlier spellings", work, write=False)
