"""The store's public seam, and the one place its database errors are translated:
``StoreUnavailable`` when the database cannot be reached, ``StoreError`` (the user's words, never
the driver's text; the full error goes to the log) for any other failure.

Every module of the store runs its work through it: ``read(doing, work)`` and
``transaction(doing, work, single=)`` run ``work`` (a plain function of a SQLAlchemy
``Connection``) as one transaction, committed when they return (rolled back if ``work`` raises);
``single``: ``work`` makes one statement, which on Postgres then runs without BEGIN and COMMIT
(the statement is its own transaction). ``read_prepared`` and ``transaction_prepared`` run the
hottest work (what a turn writes, loading a conversation), which uses only ``Statements``:
statements built once, run on the sqlite3 or asyncpg connection itself (``prepared.py``,
``pg_driver.py``). ``doing`` names the work for the user ("save the message") in errors and for
the store's latency metric. Which executor runs what, per backend, is in ``executors.py``: one
path, so SQLite's one writer is one thread for every table. A store that could not be opened is
a ``down`` store: every call raises the same ``StoreUnavailable``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from ..errors import StoreError, StoreUnavailable, SwitchboardError
from ..telemetry import store_timer
from .engine import cause_name, describe, unavailable
from .executors import Executor, Executors, executors_for
from .lanes import SqliteThreads
from .prepared import Prepared, Statements

__all__ = ["StoreBase"]

log = logging.getLogger("switchboard.store")
PING_TIMEOUT_S = 5.0

C = TypeVar("C")
T = TypeVar("T")


def _dialect_of(url: str) -> str:
    try:
        return make_url(url).get_backend_name()
    except Exception:
        return "sqlite"


class StoreBase:
    def __init__(self, engine: AsyncEngine | None, url: str, *, down: StoreUnavailable | None = None) -> None:
        """``engine`` None: a down store (``down`` says why), which refuses every call."""
        self.down = down
        self.url = url
        self.description = describe(url)
        if engine is None:
            if down is None:
                raise ValueError("a store without an engine is a down store: say why")
            self._dialect = _dialect_of(url)
            self._executors = Executors.refusing(down)
            return
        self._engine = engine
        self._dialect = engine.dialect.name
        self._pg_prepared: dict[tuple[Any, ...], Prepared] = {}  # statements compiled for PgDriver
        self._executors = executors_for(engine, url, self._pg_prepared)

    @property
    def _threads(self) -> SqliteThreads | None:
        """A SQLite file's threads (None on any other database)."""
        return self._executors.threads

    async def close(self) -> None:
        if self._threads is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._threads.close)
        if self.down is None:
            await self._engine.dispose()

    # -- the seam: every module of the store runs its work through these ------------------------

    async def read(self, doing: str, work: Callable[[Connection], T]) -> T:
        """``work`` as one read transaction (one snapshot on SQLite; on Postgres, at its READ
        COMMITTED, each statement sees its own)."""
        return await self._execute(doing, self._executors.read, work, write=False)

    async def transaction(self, doing: str, work: Callable[[Connection], T], *, single: bool = False) -> T:
        """``work`` as one write transaction, committed when this returns, rolled back if it raises.
        ``single``: ``work`` makes one statement (atomic by itself: no BEGIN and COMMIT on Postgres)."""
        executor = self._executors.single if single else self._executors.write
        return await self._execute(doing, executor, work, write=True)

    async def read_prepared(self, doing: str, work: Callable[[Statements], T]) -> T:
        """``read`` for work that runs only statements built once (``Statements``)."""
        return await self._execute(doing, self._executors.read_prepared, work, write=False)

    async def transaction_prepared(self, doing: str, work: Callable[[Statements], T], *, single: bool = False) -> T:
        """``transaction`` for work that runs only statements built once (``Statements``)."""
        executor = self._executors.single_prepared if single else self._executors.write_prepared
        return await self._execute(doing, executor, work, write=True)

    async def _execute(self, doing: str, executor: Executor[C], work: Callable[[C], T], *, write: bool) -> T:
        try:
            with store_timer(doing):
                return await executor.run(work)
        except SwitchboardError:
            raise
        except (SQLAlchemyError, OSError, TimeoutError) as exc:
            raise self._failed(doing, exc, write=write) from exc

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

    def insert_ignoring_duplicates(self, table: Any, **values: Any) -> Any:
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        stmt = dialect_insert(table)
        return (stmt.values(**values) if values else stmt).on_conflict_do_nothing()
