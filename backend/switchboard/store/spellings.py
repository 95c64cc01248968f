"""The spellings a user's address had before addresses were normalized (migration 0007), kept for
one reason: a conversation id a client picked is stored under a hash of the owner's address and
the name (`chat.conversation_ids.legacy_scoped_id`), and the hash cannot be recomputed for a new spelling.

Only that migration writes the table, before any process serves, so what was read stays true for
the process's life: an empty table (every site that had no mixed-case addresses, and every new
one) is found once and never read again; otherwise each user's spellings are read once."""

from __future__ import annotations

from cachetools import LRUCache
from sqlalchemy import Connection, select

from ._base import StoreBase
from .models import owner_spellings

__all__ = ["OwnerSpellings"]

_QUERY = select(owner_spellings.c.spelling).where(owner_spellings.c.owner.is_not(None))


class OwnerSpellings(StoreBase):
    _spellings_known: LRUCache[str, tuple[str, ...]] | None = None
    _no_spellings = False

    async def old_spellings(self, owner: str) -> list[str]:
        """The addresses `owner`'s named conversations were stored under before 0007 (mostly none)."""
        if self._no_spellings:
            return []
        known = self._spellings_known
        if known is None:
            if not await self.read("read the users' earlier spellings", _any_spelling):
                self._no_spellings = True
                return []
            known = self._spellings_known = LRUCache(maxsize=4096)
        found = known.get(owner)
        if found is None:

            def work(conn: Connection) -> tuple[str, ...]:
                return tuple(conn.execute(_QUERY.where(owner_spellings.c.owner == owner)).scalars().all())

            found = known[owner] = await self.read("read the user's earlier spellings", work)
        return list(found)


def _any_spelling(conn: Connection) -> bool:
    return conn.execute(_QUERY.limit(1)).first() is not None
