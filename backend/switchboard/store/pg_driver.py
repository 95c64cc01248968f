"""The hottest one-statement calls of Postgres (what a turn writes, its claim and release), run on
the asyncpg connection itself.

On Postgres such a call is one round trip; SQLAlchemy's handling of it (the compiled cache
look-up, the execution context, the cursor adapter over asyncpg) cost about as much CPU as the
round trip. ``PgDriver`` runs the same statements (``statements.py``, ``live.py``) as
``prepared.Prepared`` ones, compiled once for the asyncpg dialect, values bound and rows read
through each type's own processors, on a connection of SQLAlchemy's pool checked out for the call
(``pg_call``): the pool's own connection, without a SQLAlchemy ``Connection`` around it, so nothing
sets an isolation level on check-out and resets it on check-in. asyncpg runs a statement outside a
transaction in autocommit: the statement is its own transaction. asyncpg keeps each statement
prepared on the server (its statement cache). Errors become SQLAlchemy's, through SQLAlchemy's own
translation of asyncpg's, so callers catch the same ``IntegrityError`` and ``_base`` explains
failures the same way. It runs in a greenlet, as SQLAlchemy's own calls do (``await_only``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import Executable
from sqlalchemy.util import await_only, greenlet_spawn

from .prepared import Done, Parameters, Prepared, Statements, prepared_for

__all__ = ["PgDriver", "pg_call"]

T = TypeVar("T")

_COUNT = re.compile(r"(?:SELECT|UPDATE|DELETE|INSERT \d+) (\d+)")


async def pg_call(engine: Engine, prepared: dict[tuple[Any, ...], Prepared], work: Callable[[Statements], T]) -> T:
    """``work`` on a connection checked out of ``engine``'s pool for it, and back in after. The
    pool's check-out and check-in events run as for any use (the check before reuse, engine.py)."""

    def call() -> T:
        dialect = engine.dialect
        try:
            pooled = engine.raw_connection()
        except dialect.loaded_dbapi.Error as exc:  # as SQLAlchemy's Connection raises it: DBAPIError
            raise DBAPIError.instance(
                None,
                None,
                exc,
                dialect.loaded_dbapi.Error,
                connection_invalidated=dialect.is_disconnect(exc, None, None),
                dialect=dialect,
            ) from exc
        try:
            return work(PgDriver(pooled, engine.dialect, prepared))
        finally:
            pooled.close()  # back to the pool (its reset on return: no transaction, nothing to do)

    return await greenlet_spawn(call)


class PgDriver:
    """One-statement calls on a pooled asyncpg connection, outside any transaction."""

    def __init__(
        self, pooled: PoolProxiedConnection, dialect: Dialect, prepared: dict[tuple[Any, ...], Prepared]
    ) -> None:
        self._pooled = pooled
        self._dialect = dialect
        self._adapted: Any = pooled.dbapi_connection  # SQLAlchemy's adapter: its error translation
        self._raw: Any = pooled.driver_connection  # asyncpg.Connection
        self._dbapi = dialect.loaded_dbapi
        self._prepared = prepared

    def execute(self, statement: Executable, parameters: Parameters, /) -> Done:
        if not isinstance(parameters, Mapping):  # many rows: one statement per row, all or none
            prepared = prepared_for(self._prepared, statement, self._dialect, tuple(parameters[0]))
            many = [prepared.bind(values) for values in parameters]
            try:
                await_only(self._raw.executemany(prepared.sql, many))
            except Exception as exc:
                raise self._translated(exc, prepared.sql, many) from exc
            return Done(-1, [])
        prepared = prepared_for(self._prepared, statement, self._dialect, tuple(parameters))
        args = prepared.bind(parameters)
        try:
            if prepared.keys:  # a SELECT, or a statement with RETURNING
                rows = [tuple(record) for record in await_only(self._raw.fetch(prepared.sql, *args))]
                return Done(len(rows), prepared.rows(rows), prepared.keys)
            status = await_only(self._raw.execute(prepared.sql, *args))
        except Exception as exc:
            raise self._translated(exc, prepared.sql, args) from exc
        counted = _COUNT.match(status or "")
        return Done(int(counted.group(1)) if counted else -1, [])

    def _translated(self, exc: Exception, sql: str, args: Sequence[Any]) -> BaseException:
        try:
            self._adapted._handle_exception(exc)  # raises asyncpg's error as a DBAPI one
        except self._dbapi.Error as dbapi_error:
            gone = self._dialect.is_disconnect(dbapi_error, self._adapted, None)
            if gone:
                self._pooled.invalidate()  # the pool drops it at check-in
            return DBAPIError.instance(
                sql, args, dbapi_error, self._dbapi.Error, connection_invalidated=gone, dialect=self._dialect
            )
        except Exception as other:
            return other
        return exc
