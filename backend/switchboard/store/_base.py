"""Connection and transaction plumbing of the store, and the one place its database errors are
translated: ``StoreUnavailable`` when the database cannot be reached, ``StoreError`` (the user's
words, never the driver's text; the full error goes to the log) for any other failure.

``_run(doing, work, write=)`` runs ``work`` (a plain function of a SQLAlchemy ``Connection``) as
one transaction. On a SQLite file it runs whole on the store's own threads (one writer, as SQLite
writes one at a time anyway, and a few readers, which WAL lets run beside it): one thread hop per
transaction, where the async driver made one per statement. On Postgres it runs on the async
engine through ``run_sync`` (asyncpg needs no thread), and a read, or a write of one statement
(``single=True``), runs without BEGIN and COMMIT (autocommit): the statement is its own
transaction, and at Postgres' READ COMMITTED each statement of a read sees its own snapshot
anyway; that saves two of the three or four round trips such a call made. ``_write``/``_read``
hand out an async connection for callers that want one."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, nullcontext
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ..errors import StoreError, SwitchboardError
from ..telemetry import store_timer
from .engine import WRITE, cause_name, describe, make_sqlite_sync_engine, unavailable

__all__ = ["StoreBase"]

log = logging.getLogger("switchboard.store")
PING_TIMEOUT_S = 5.0
SQLITE_READERS = 4  # threads reading a SQLite file beside its one writer

T = TypeVar("T")


class _SqliteThreads:
    """A sqlite3 engine on the database file, and the threads its transactions run on."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.writer = engine.execution_options(**WRITE)
        self.write_thread = ThreadPoolExecutor(1, thread_name_prefix="store-write")
        self.read_threads = ThreadPoolExecutor(SQLITE_READERS, thread_name_prefix="store-read")

    def write(self, work: Callable[[Connection], T]) -> T:
        with self.writer.begin() as conn:
            return work(conn)

    def read(self, work: Callable[[Connection], T]) -> T:
        with self.engine.begin() as conn:  # BEGIN (deferred): one snapshot for every statement of `work`
            return work(conn)

    def close(self) -> None:
        self.write_thread.shutdown(wait=True)
        self.read_threads.shutdown(wait=True)
        self.engine.dispose()


_WRITE_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def _write_lock(engine: AsyncEngine) -> asyncio.Lock:
    """One lock per engine (stores sharing an engine share its writer turn)."""
    return _WRITE_LOCKS.setdefault(engine.sync_engine, asyncio.Lock())


class StoreBase:
    def __init__(self, engine: AsyncEngine, url: str) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**WRITE)
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._dialect = engine.dialect.name
        # SQLite has one writer at a time. Writers of this process queue here, in order, without
        # holding a pooled connection: left to SQLite's busy handler they would hold every pooled
        # connection while sleeping between retries, and under load fail (pool or busy timeout).
        self._write_turn = _write_lock(engine) if self._dialect == "sqlite" else None
        self.url = url
        self.description = describe(url)
        self._threads: _SqliteThreads | None = None
        self._threads_made = False

    async def close(self) -> None:
        if self._threads is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._threads.close)
            self._threads = None
        await self._engine.dispose()

    def _sqlite_threads(self) -> _SqliteThreads | None:
        if not self._threads_made:
            self._threads_made = True
            engine = make_sqlite_sync_engine(self.url) if self._dialect == "sqlite" else None
            self._threads = _SqliteThreads(engine) if engine is not None else None
        return self._threads

    async def _run(self, doing: str, work: Callable[[Connection], T], *, write: bool, single: bool = False) -> T:
        """``work`` as one transaction, committed when this returns (rolled back if it raises).
        ``single``: ``work`` makes one statement (which is then atomic by itself)."""
        try:
            with store_timer(doing):
                return await self._transaction(work, write=write, single=single)
        except SwitchboardError:
            raise
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise self._failed(doing, exc, write=write) from exc

    async def _transaction(self, work: Callable[[Connection], T], *, write: bool, single: bool) -> T:
        threads = self._sqlite_threads()
        if threads is not None:
            pool, call = (threads.write_thread, threads.write) if write else (threads.read_threads, threads.read)
            return await asyncio.get_running_loop().run_in_executor(pool, call, work)
        if self._dialect == "postgresql" and (single or not write):
            async with self._autocommit.connect() as conn:
                return await conn.run_sync(work)
        async with (self._writer if write else self._engine).begin() as conn:
            return await conn.run_sync(work)

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._dialect

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
        stmt = dialect_insert(table)
        return (stmt.values(**values) if values else stmt).on_conflict_do_nothing()
