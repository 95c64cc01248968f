"""Connection and transaction plumbing of the store, and the one place its database errors are
translated: ``StoreUnavailable`` when the database cannot be reached, ``StoreError`` (the user's
words, never the driver's text; the full error goes to the log) for any other failure."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..errors import StoreError, SwitchboardError
from .engine import WRITE, cause_name, describe, unavailable

__all__ = ["StoreBase"]

log = logging.getLogger("switchboard.store")
PING_TIMEOUT_S = 5.0
_WRITE_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def _write_lock(engine: AsyncEngine) -> asyncio.Lock:
    """One lock per engine (stores sharing an engine share its writer turn)."""
    return _WRITE_LOCKS.setdefault(engine.sync_engine, asyncio.Lock())


class StoreBase:
    def __init__(self, engine: AsyncEngine, url: str) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**WRITE)
        self._dialect = engine.dialect.name
        # SQLite has one writer at a time. Writers of this process queue here, in order, without
        # holding a pooled connection: left to SQLite's busy handler they would hold every pooled
        # connection while sleeping between retries, and under load fail (pool or busy timeout).
        self._write_turn = _write_lock(engine) if self._dialect == "sqlite" else None
        self.url = url
        self.description = describe(url)

    async def close(self) -> None:
        await self._engine.dispose()

    async def ping(self) -> None:
        try:
            async with asyncio.timeout(PING_TIMEOUT_S), self._engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception as exc:
            raise unavailable(self.url, exc) from exc

    def _failed(self, doing: str, exc: Exception, *, write: bool) -> StoreError:
        log.warning("store: could not %s in %s", doing, self.description, exc_info=exc)
        if isinstance(exc, OSError | TimeoutError) or (isinstance(exc, DBAPIError) and exc.connection_invalidated):
            return unavailable(self.url, exc)
        outcome = "; nothing of it was saved." if write else "."
        return StoreError(f"Could not {doing}: the conversation store failed ({cause_name(exc)}){outcome}")

    @asynccontextmanager
    async def _write(self, doing: str) -> AsyncIterator[AsyncConnection]:
        try:
            async with self._write_turn or nullcontext(), self._writer.begin() as conn:
                yield conn
        except SwitchboardError:
            raise
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise self._failed(doing, exc, write=True) from exc

    @asynccontextmanager
    async def _read(self, doing: str) -> AsyncIterator[AsyncConnection]:
        try:
            async with self._engine.connect() as conn:
                yield conn
        except SwitchboardError:
            raise
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise self._failed(doing, exc, write=False) from exc

    def _insert_ignoring_duplicates(self, table: Any, **values: Any) -> Any:
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        return dialect_insert(table).values(**values).on_conflict_do_nothing()
