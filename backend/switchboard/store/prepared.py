"""The hottest store calls of a SQLite file (what a turn writes, loading a conversation), run on
the sqlite3 connection itself.

SQLAlchemy's statement handling (the compiled cache look-up, building the parameters, the
execution context, its BEGIN and COMMIT events) cost more CPU than SQLite's own work for the few
small statements of such a call. ``SqliteDriver`` runs the same statements, written once with
SQLAlchemy (``statements.py``), as ``Prepared`` ones: each compiled once with the connection's own
dialect, as SQLAlchemy compiles it for those parameter names; values bound as SQLAlchemy binds
them, through each type's own bind processor (``UTCDateTime``'s stored text, ``JSON``'s text), and
rows read through each type's own result processor. So the rows are the same, and every other
read sees them as before. The driver's errors become SQLAlchemy's (``DBAPIError.instance``, as
SQLAlchemy translates them), so callers catch the same ``IntegrityError`` and ``_base`` explains
failures the same way.

``SqliteDriver`` speaks the part of a SQLAlchemy ``Connection`` that such work uses:
``execute(statement, parameters)`` (a mapping, or a list of them for many rows) and, on its
result, ``rowcount``, ``first()``, ``one()``, ``scalar_one()``, ``scalars()`` and ``mappings()``
(with its ``first()``): the ``Statements`` protocol, which a ``Connection`` satisfies too.
``pg_driver.PgDriver`` speaks the same on Postgres."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, MultipleResultsFound, NoResultFound
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler

__all__ = ["MOST_PREPARED", "Done", "MappedRows", "Prepared", "Rows", "SqliteDriver", "Statements", "prepared_for"]

T = TypeVar("T")

Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]]  # one row's values, or many rows'


class MappedRows(Protocol):
    def __iter__(self) -> Iterator[Mapping[Any, Any]]: ...
    def first(self) -> Mapping[Any, Any] | None: ...


class Rows(Protocol):
    """What work on ``Statements`` reads of a statement's result."""

    @property
    def rowcount(self) -> int: ...
    def first(self) -> Sequence[Any] | None: ...
    def one(self) -> Sequence[Any]: ...
    def scalar_one(self) -> Any: ...
    def scalars(self) -> Iterable[Any]: ...
    def mappings(self) -> MappedRows: ...


class Statements(Protocol):
    """The part of a SQLAlchemy ``Connection`` that the hottest work uses: statements built once
    (``statements.py``), executed with their parameters (``{}`` for none). A ``Connection``,
    ``SqliteDriver`` and ``pg_driver.PgDriver`` all speak it."""

    def execute(self, statement: Executable, parameters: Parameters, /) -> Rows: ...


class Prepared:
    """A statement compiled once for ``dialect`` with the parameter names it is executed with, and
    how to bind their values to its positional placeholders."""

    __slots__ = ("_results", "_slots", "keys", "sql")

    def __init__(self, statement: Executable, dialect: Dialect, keys: Sequence[str]) -> None:
        if not isinstance(statement, ClauseElement):
            raise TypeError(f"cannot prepare {type(statement).__name__}: not a SQL expression")
        compiled = cast(SQLCompiler, statement.compile(dialect=dialect, column_keys=list(keys)))
        if dialect.paramstyle not in ("qmark", "numeric_dollar") or compiled.positiontup is None:
            raise ValueError(f"{dialect.name} does not take positional parameters")
        if getattr(compiled, "literal_execute_params", None) or getattr(compiled, "post_compile_params", None):
            raise ValueError("a statement with parameters rendered at execution cannot be prepared")
        self.sql = compiled.string
        # (name, value when the caller gives none, the type's bind processor): SQLAlchemy's own
        # order of business, construct_params then the processors
        self._slots: list[tuple[str, Any, Callable[[Any], Any] | None]] = []
        for name in compiled.positiontup:
            bind = compiled.binds[name]
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            self._slots.append((name, _MISSING if bind.required else bind.effective_value, processor))
        # what it returns (a SELECT's columns, a RETURNING clause's): their names, and each type's
        # result processor (sqlite3 describes no column types: SQLAlchemy passes None too)
        columns = list(getattr(statement, "exported_columns", ()))
        self.keys = tuple(column.key for column in columns)
        processors = [column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns]
        self._results = processors if any(processors) else None

    def bind(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        bound = []
        for name, default, processor in self._slots:
            value = values.get(name, default)
            if value is _MISSING:
                raise KeyError(f"no value for the parameter '{name}'")
            bound.append(value if processor is None else processor(value))
        return tuple(bound)

    def rows(self, fetched: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        if self._results is None:
            return fetched
        processors = self._results
        return [tuple(v if p is None else p(v) for p, v in zip(processors, row, strict=True)) for row in fetched]


_MISSING = object()


MOST_PREPARED = 256  # statements kept compiled per engine (the hot calls use about twenty)


def prepared_for(
    cache: dict[tuple[Any, ...], Prepared], statement: Executable, dialect: Dialect, keys: tuple[str, ...]
) -> Prepared:
    """The statement compiled for these parameter names, from `cache` (one per engine), or compiled now.

    Statements are keyed by the object: a caller builds each once, with bound parameters. One
    built per call would be compiled per call; the cache then forgets its oldest entries rather
    than grow."""
    prepared = cache.get((statement, keys))
    if prepared is None:
        prepared = Prepared(statement, dialect, keys)
        if len(cache) >= MOST_PREPARED:
            try:
                cache.pop(next(iter(cache)), None)  # the oldest (dicts keep insertion order)
            except (RuntimeError, StopIteration):  # another thread changed the cache meanwhile
                pass
        cache[statement, keys] = prepared
    return prepared


class Done:
    """A statement's result, fetched whole."""

    __slots__ = ("keys", "rowcount", "rows")

    def __init__(self, rowcount: int, rows: list[tuple[Any, ...]], keys: tuple[str, ...] = ()) -> None:
        self.rowcount, self.rows, self.keys = rowcount, rows, keys

    def first(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def one(self) -> tuple[Any, ...]:
        if len(self.rows) != 1:
            raise (NoResultFound if not self.rows else MultipleResultsFound)("Exactly one row was required")
        return self.rows[0]

    def scalar_one(self) -> Any:
        if not self.rows:
            raise NoResultFound("No row was found when one was required")
        if len(self.rows) > 1:
            raise MultipleResultsFound("Multiple rows were found when exactly one was required")
        return self.rows[0][0]

    def scalars(self) -> list[Any]:
        return [row[0] for row in self.rows]

    def mappings(self) -> _Mappings:
        return _Mappings(dict(zip(self.keys, row, strict=True)) for row in self.rows)


class _Mappings(list[dict[str, Any]]):
    def first(self) -> dict[str, Any] | None:
        return self[0] if self else None


class SqliteDriver:
    """One transaction's statements on the sqlite3 connection under a held SQLAlchemy ``Connection``
    (which is in no transaction of its own meanwhile)."""

    def __init__(self, conn: Connection, prepared: dict[tuple[Any, ...], Prepared]) -> None:
        self._conn = conn
        self._dialect = conn.dialect
        self._raw: Any = conn.connection.driver_connection  # sqlite3.Connection
        self._dbapi = conn.dialect.loaded_dbapi
        self._prepared = prepared  # shared by the transactions of one engine

    def execute(self, statement: Executable, parameters: Parameters, /) -> Done:
        if isinstance(parameters, Mapping):
            prepared = self._prepare(statement, tuple(parameters))
            args: Any = prepared.bind(parameters)
        else:
            prepared = self._prepare(statement, tuple(parameters[0]))
            args = [prepared.bind(p) for p in parameters]
        try:
            if isinstance(args, list):
                return Done(self._raw.executemany(prepared.sql, args).rowcount, [])
            cursor = self._raw.execute(prepared.sql, args)
            rows = cursor.fetchall()  # to the end: a RETURNING statement is done only then
            return Done(cursor.rowcount, prepared.rows(rows), prepared.keys)
        except self._dbapi.Error as exc:
            raise self._translated(exc, prepared.sql, args) from exc

    def _prepare(self, statement: Executable, keys: tuple[str, ...]) -> Prepared:
        return prepared_for(self._prepared, statement, self._dialect, keys)

    def transaction(self, work: Callable[[Statements], T], begin: str) -> T:
        """``work`` between ``begin`` (e.g. ``BEGIN IMMEDIATE``) and COMMIT; rolled back if it raises."""
        try:
            self._raw.execute(begin)
        except self._dbapi.Error as exc:
            raise self._translated(exc, begin, ()) from exc
        try:
            result = work(self)
            try:
                self._raw.commit()
            except self._dbapi.Error as exc:
                raise self._translated(exc, "COMMIT", ()) from exc
        except BaseException:
            self._rollback()
            raise
        return result

    def _rollback(self) -> None:
        try:
            if self._raw.in_transaction:
                self._raw.rollback()
        except self._dbapi.Error:  # the connection is unusable: the next transaction opens another
            self._conn.invalidate()

    def _translated(self, exc: Any, sql: str, args: Any) -> BaseException:
        """The driver's error as SQLAlchemy raises it (and, as SQLAlchemy does, a connection found
        gone is dropped)."""
        gone = self._dialect.is_disconnect(exc, self._raw, None)
        if gone:
            self._conn.invalidate()
        error: BaseException = DBAPIError.instance(
            sql,
            args,
            exc,
            self._dbapi.Error,
            connection_invalidated=gone,
            dialect=self._dialect,
            ismulti=isinstance(args, list),
        )
        return error
