"""The one seam between the store's modules and a database: an ``Executor`` runs ``work`` (a
plain function of a connection) as one transaction, committed when ``run`` returns, rolled back
when ``work`` raises. ``work`` is given a SQLAlchemy ``Connection``, or, for the hottest calls,
anything that speaks ``Statements`` (statements built once, their results read whole).

Each backend has its own executors, picked once when the store opens (``executors_for``):

| executor | runs `work` | used for |
|---|---|---|
| ``OnLane`` | whole on one of the store's threads (``lanes.py``); the hot calls there on the sqlite3 connection itself (``prepared.SqliteDriver``) | a SQLite file |
| ``InTransaction`` | on the async engine, BEGIN ... COMMIT (optionally one writer at a time) | Postgres writes; in-memory SQLite |
| ``Autocommit`` | on the async engine without BEGIN and COMMIT: each statement its own transaction | Postgres reads, one-statement writes |
| ``OnAsyncpg`` | on the pooled asyncpg connection itself (``pg_driver.PgDriver``), autocommit | Postgres, the hot reads and one-statement writes |
| ``Refusing`` | never: raises why the store is down | a store that could not be opened |

``Autocommit`` and ``OnAsyncpg`` are atomic only for work of one statement, which is all they
are given (a read at READ COMMITTED sees a snapshot per statement anyway)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from ..errors import StoreUnavailable
from .engine import WRITE, make_sqlite_sync_engine
from .lanes import Lane, SqliteThreads
from .pg_driver import pg_call
from .prepared import Prepared, Statements

__all__ = [
    "Autocommit",
    "Executor",
    "Executors",
    "InTransaction",
    "OnAsyncpg",
    "OnLane",
    "Refusing",
    "executors_for",
]

T = TypeVar("T")
C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)


class Executor(Protocol[C_co]):
    """Runs ``work`` on a connection of type ``C_co`` as one transaction. An executor that gives a
    ``Connection`` also serves work that needs only ``Statements``."""

    async def run(self, work: Callable[[C_co], T]) -> T: ...


class _Transaction(Protocol[C_co]):
    def __call__(self, work: Callable[[C_co], T], /) -> T: ...


class OnLane(Generic[C]):
    """``transaction`` (one of ``SqliteThreads``') on one of ``lane``'s threads."""

    def __init__(self, lane: Lane, transaction: _Transaction[C]) -> None:
        self._lane, self._transaction = lane, transaction

    async def run(self, work: Callable[[C], T]) -> T:
        return await self._lane.call(self._transaction, work)


class InTransaction:
    def __init__(self, engine: AsyncEngine, turn: asyncio.Lock | None = None) -> None:
        self._engine, self._turn = engine, turn

    async def run(self, work: Callable[[Connection], T]) -> T:
        if self._turn is None:
            async with self._engine.begin() as conn:
                return await conn.run_sync(work)
        async with self._turn, self._engine.begin() as conn:
            return await conn.run_sync(work)


class Autocommit:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine.execution_options(isolation_level="AUTOCOMMIT")

    async def run(self, work: Callable[[Connection], T]) -> T:
        async with self._engine.connect() as conn:
            return await conn.run_sync(work)


class OnAsyncpg:
    def __init__(self, engine: AsyncEngine, prepared: dict[tuple[Any, ...], Prepared]) -> None:
        self._engine, self._prepared = engine.sync_engine, prepared

    async def run(self, work: Callable[[Statements], T]) -> T:
        return await pg_call(self._engine, self._prepared, work)


class Refusing:
    def __init__(self, down: StoreUnavailable) -> None:
        self._down = down

    async def run(self, work: Callable[[Any], T]) -> T:
        # a new exception each time: one raised again keeps growing its traceback
        raise StoreUnavailable(self._down.message, action=self._down.action)


@dataclass(frozen=True, slots=True)
class Executors:
    """A store's executors, one per kind of work."""

    read: Executor[Connection]
    write: Executor[Connection]
    single: Executor[Connection]  # a write of one statement
    read_prepared: Executor[Statements]
    write_prepared: Executor[Statements]
    single_prepared: Executor[Statements]
    threads: SqliteThreads | None = None  # a SQLite file's, to close with the store

    @classmethod
    def refusing(cls, down: StoreUnavailable) -> Executors:
        no = Refusing(down)
        return cls(no, no, no, no, no, no)


_WRITE_TURNS: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()


def executors_for(engine: AsyncEngine, url: str, pg_prepared: dict[tuple[Any, ...], Prepared]) -> Executors:
    """The executors for the database at ``url`` (``engine`` is its async engine)."""
    writer = engine.execution_options(**WRITE)
    if engine.dialect.name == "postgresql":
        write = InTransaction(writer)
        autocommit = Autocommit(engine)
        on_asyncpg = OnAsyncpg(engine, pg_prepared)
        return Executors(autocommit, write, autocommit, on_asyncpg, write, on_asyncpg)
    sync_engine = make_sqlite_sync_engine(url)
    if sync_engine is None:
        # An in-memory SQLite database has no writer thread: its writers take turns here, in order,
        # without holding a pooled connection while SQLite's busy handler sleeps between retries
        # (one turn per engine: stores sharing an engine share its writer's turn).
        turn = _WRITE_TURNS.setdefault(engine.sync_engine, asyncio.Lock())
        read, write = InTransaction(engine), InTransaction(writer, turn)
        return Executors(read, write, write, read, write, write)
    threads = SqliteThreads(sync_engine)
    write_lane, read_lane = threads.write_thread, threads.read_threads
    write_prepared = OnLane[Statements](write_lane, threads.write_prepared)
    lane_write = OnLane[Connection](write_lane, threads.write)
    return Executors(
        OnLane[Connection](read_lane, threads.read),
        lane_write,
        lane_write,
        OnLane[Statements](read_lane, threads.read_prepared),
        write_prepared,
        write_prepared,
        threads,
    )
