"""Connection and transaction plumbing of the store, and the one place its database errors are
translated: ``StoreUnavailable`` when the database cannot be reached, ``StoreError`` (the user's
words, never the driver's text; the full error goes to the log) for any other failure.

``_run(doing, work, write=)`` runs ``work`` (a plain function of a SQLAlchemy ``Connection``) as
one transaction. On a SQLite file it runs whole on the store's own threads (one writer, as SQLite
writes one at a time anyway, and a few readers, which WAL lets run beside it): one thread hop per
transaction, where the async driver made one per statement. The hottest calls (what a turn
writes, loading a conversation) ask for ``driver=True``: there they run on the sqlite3 connection
itself, their statements compiled once (``prepared.py``), and so do the one-statement ones on
Postgres, on the asyncpg connection (``pg_driver.py``). On Postgres it runs on the async engine
through ``run_sync`` (asyncpg needs no thread), and a read, or a write of one statement
(``single=True``), runs without BEGIN and COMMIT (autocommit): the statement is its own
transaction, and at Postgres' READ COMMITTED each statement of a read sees its own snapshot
anyway; that saves two of the three or four round trips such a call made.

Every caller of the database (conversations, API tokens, users' credentials, tasks, the live
turns of several processes) goes through ``_run``: one path, so SQLite's one writer is one thread
for all of them. A store that could not be opened is a ``down`` store (``StoreBase.down``): every
``_run`` raises the same ``StoreUnavailable``, the one way the store says it is down."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import weakref
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, TypeVar, cast

from sqlalchemy import Connection, Engine, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from ..errors import StoreError, StoreUnavailable, SwitchboardError
from ..telemetry import store_timer
from .engine import WRITE, cause_name, describe, make_sqlite_sync_engine, unavailable
from .pg_driver import PgDriver, pg_call
from .prepared import Prepared, SqliteDriver

__all__ = ["Lane", "StoreBase"]

log = logging.getLogger("switchboard.store")
PING_TIMEOUT_S = 5.0
SQLITE_READERS = 4  # threads reading a SQLite file beside its one writer

T = TypeVar("T")


class Lane:
    """Threads that run one job at a time each, taken in order from one queue, for the event loop:
    ``await lane.call(fn, arg)``. What ``run_in_executor`` on a ``ThreadPoolExecutor`` does, for
    less: no ``concurrent.futures.Future`` and its condition, no idle-thread semaphore, no future
    chained to another; the result goes straight to the caller's future by ``call_soon_threadsafe``.
    A job whose caller was cancelled before it started is skipped, as the executor skips it."""

    def __init__(self, threads: int, name: str) -> None:
        self._size, self._name = threads, name
        self._jobs: queue.SimpleQueue[tuple[Callable[[Any], Any], Any, asyncio.Future[Any]] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    async def call(self, fn: Callable[[Any], T], arg: Any) -> T:
        if not self._threads:
            self._start()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((fn, arg, future))
        return await future

    def _start(self) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is closed")
            while len(self._threads) < self._size:
                thread = threading.Thread(target=self._work, name=f"{self._name}_{len(self._threads)}", daemon=True)
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, arg, future = job
            if future.cancelled():  # (a read of a flag the loop sets: no harm if it is set just after)
                continue
            try:
                result, failure = fn(arg), None
            except BaseException as exc:
                result, failure = None, exc
            try:
                future.get_loop().call_soon_threadsafe(_settle, future, result, failure)
            except RuntimeError:  # the loop is closed: nobody waits any more
                pass

    def close(self) -> None:
        """Lets the queued jobs run, then stops the threads."""
        with self._lock:
            self._closed = True
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join()


def _settle(future: asyncio.Future[Any], result: Any, failure: BaseException | None) -> None:
    if future.cancelled():
        return
    if failure is None:
        future.set_result(result)
    elif isinstance(failure, StopIteration):  # a future cannot hold one
        future.set_exception(RuntimeError(f"StopIteration raised in the store's work: {failure!r}"))
    else:
        future.set_exception(failure)


class _SqliteThreads:
    """A sqlite3 engine on the database file, and the threads its transactions run on. Each
    thread keeps one connection of its own open (no pool check-out and reset per transaction);
    one that broke is replaced by the next transaction."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.writer = engine.execution_options(**WRITE)
        self.write_thread = Lane(1, "store-write")
        self.read_threads = Lane(SQLITE_READERS, "store-read")
        self._held = threading.local()
        self.prepared: dict[tuple[Any, ...], Prepared] = {}  # statements compiled for SqliteDriver
        self._opened: list[Connection] = []
        self._opened_lock = threading.Lock()

    def _connection(self, source: Engine) -> Connection:
        conn: Connection | None = getattr(self._held, "conn", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self._held.conn = source.connect()
            with self._opened_lock:
                self._opened = [c for c in self._opened if not c.closed] + [conn]
        return conn

    def write(self, work: Callable[[Connection], T]) -> T:
        with self._connection(self.writer).begin() as transaction:
            return work(transaction.connection)

    def write_driver(self, work: Callable[[SqliteDriver], T]) -> T:
        driver = SqliteDriver(self._connection(self.writer), self.prepared)
        return driver.transaction(work, "BEGIN IMMEDIATE")

    def read_driver(self, work: Callable[[SqliteDriver], T]) -> T:
        driver = SqliteDriver(self._connection(self.engine), self.prepared)
        return driver.transaction(work, "BEGIN")

    def read(self, work: Callable[[Connection], T]) -> T:
        # BEGIN (deferred): one snapshot for every statement of `work`
        with self._connection(self.engine).begin() as transaction:
            return work(transaction.connection)

    def close(self) -> None:
        self.write_thread.close()
        self.read_threads.close()
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
        self.engine.dispose()


_WRITE_LOCKS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def _write_lock(engine: AsyncEngine) -> asyncio.Lock:
    """One lock per engine (stores sharing an engine share its writer turn)."""
    return _WRITE_LOCKS.setdefault(engine.sync_engine, asyncio.Lock())


def _dialect_of(url: str) -> str:
    try:
        return make_url(url).get_backend_name()
    except Exception:
        return "sqlite"


class StoreBase:
    def __init__(self, engine: AsyncEngine | None, url: str, *, down: StoreUnavailable | None = None) -> None:
        """``engine`` None: a down store (``down`` says why), which refuses every call."""
        if engine is None and down is None:
            raise ValueError("a store without an engine is a down store: say why")
        self.down = down
        self.url = url
        self.description = describe(url)
        self._threads: _SqliteThreads | None = None
        self._threads_made = engine is None
        self._write_turn: asyncio.Lock | None = None
        if engine is None:
            self._dialect = _dialect_of(url)
            return
        self._engine = engine
        self._pg_prepared: dict[tuple[Any, ...], Prepared] = {}  # statements compiled for PgDriver
        self._writer = engine.execution_options(**WRITE)
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._dialect = engine.dialect.name
        # An in-memory SQLite database has no writer thread: its writers take turns here, in order,
        # without holding a pooled connection while SQLite's busy handler sleeps between retries.
        self._write_turn = _write_lock(engine) if self._dialect == "sqlite" else None

    async def close(self) -> None:
        if self._threads is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._threads.close)
            self._threads = None
        if self.down is None:
            await self._engine.dispose()

    def _sqlite_threads(self) -> _SqliteThreads | None:
        if not self._threads_made:
            self._threads_made = True
            engine = make_sqlite_sync_engine(self.url) if self._dialect == "sqlite" else None
            self._threads = _SqliteThreads(engine) if engine is not None else None
        return self._threads

    async def _run(
        self, doing: str, work: Callable[[Connection], T], *, write: bool, single: bool = False, driver: bool = False
    ) -> T:
        """``work`` as one transaction, committed when this returns (rolled back if it raises).
        ``single``: ``work`` makes one statement (which is then atomic by itself). ``driver``:
        ``work`` only calls ``execute(statement, parameters)`` and reads ``rowcount``, ``first()``,
        ``scalar_one()``, ``scalars()`` or ``mappings()`` (and its ``first()``) of the result: on a
        SQLite file it runs on the sqlite3 connection itself (``prepared.SqliteDriver``), and on
        Postgres, for a read or a ``single`` write, on the asyncpg connection (``pg_driver``)."""
        if self.down is not None:
            raise self._refusal()
        try:
            with store_timer(doing):
                return await self._transaction(work, write=write, single=single, driver=driver)
        except SwitchboardError:
            raise
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise self._failed(doing, exc, write=write) from exc

    async def _transaction(self, work: Callable[[Connection], T], *, write: bool, single: bool, driver: bool) -> T:
        threads = self._sqlite_threads()
        if threads is not None and driver:
            on_driver = cast(Callable[[SqliteDriver], T], work)  # the caller says it needs no more
            if write:
                return await threads.write_thread.call(threads.write_driver, on_driver)
            return await threads.read_threads.call(threads.read_driver, on_driver)
        if threads is not None:
            if write:
                return await threads.write_thread.call(threads.write, work)
            return await threads.read_threads.call(threads.read, work)
        if self._dialect == "postgresql" and (single or not write):
            if driver:  # on a pooled asyncpg connection itself (pg_driver.py)
                return await pg_call(self._engine.sync_engine, self._pg_prepared, cast(Callable[[PgDriver], T], work))
            async with self._autocommit.connect() as conn:
                return await conn.run_sync(work)
        async with self._write_turn if write and self._write_turn else nullcontext():
            async with (self._writer if write else self._engine).begin() as conn:
                return await conn.run_sync(work)

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._dialect

    @property
    def joins_writes(self) -> bool:
        """Whether messages written together cost less than each on its own: on SQLite every
        transaction is a trip to the writer thread; on Postgres a lone message is one statement,
        several need BEGIN, two statements each and COMMIT (``TurnWrites.append``)."""
        return self._dialect != "postgresql"

    def _refusal(self) -> StoreUnavailable:
        """Why a down store refuses (a new exception each time: one raised again keeps growing its traceback)."""
        assert self.down is not None
        return StoreUnavailable(self.down.message, action=self.down.action)

    async def ping(self) -> None:
        if self.down is not None:
            raise self._refusal()
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

    def _insert_ignoring_duplicates(self, table: Any, **values: Any) -> Any:
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        stmt = dialect_insert(table)
        return (stmt.values(**values) if values else stmt).on_conflict_do_nothing()
