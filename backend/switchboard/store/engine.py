"""Engines for the two backends, with the per-connection settings each needs.

SQLite: WAL (readers never wait for the writer), foreign keys ON (cascades), a busy timeout,
and write transactions that start with ``BEGIN IMMEDIATE`` so that two processes writing the same
file queue for the lock instead of failing when a read turns into a write. Postgres: a connect
timeout, and a ping before a pooled connection is reused (the server may have restarted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ..errors import StoreUnavailable

__all__ = ["WRITE", "cause_name", "describe", "make_engine", "unavailable"]

# Execution option that marks a connection as a writer (SQLite: BEGIN IMMEDIATE).
WRITE = {"switchboard_write": True}
SQLITE_BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10


def describe(url: str | URL) -> str:
    """The URL as it may be shown to people: the password is masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as "(unparsable)", never echoed with a secret
        return "(an unparsable database URL)"


def _innermost(exc: BaseException) -> BaseException:
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        inner = getattr(exc, "orig", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def cause_name(exc: BaseException) -> str:
    """The class name of the innermost error (e.g. ``ConnectionRefusedError``,
    ``InvalidPasswordError``): says what went wrong without echoing driver text."""
    return type(_innermost(exc)).__name__


def unavailable(url: str | URL, exc: BaseException, doing: str = "reach") -> StoreUnavailable:
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(_innermost(exc), OSError | TimeoutError):
        doing = "reach"
    return StoreUnavailable(
        f"cannot {doing} the conversation store at {describe(url)} ({cause_name(exc)}); check that the "
        "database server is running and reachable from here, and that SWITCHBOARD_DATABASE_URL names it "
        "with a user and password that may connect and create tables"
    )


def make_engine(url: str) -> AsyncEngine:
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise StoreUnavailable(
            "SWITCHBOARD_DATABASE_URL is not a database URL; use sqlite+aiosqlite:///PATH or "
            "postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB"
        ) from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed)
    if backend == "postgresql":
        return _postgres_engine(parsed)
    raise StoreUnavailable(
        f"the database {describe(parsed)} is neither SQLite nor Postgres; use sqlite+aiosqlite:///PATH or "
        "postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB"
    )


def _sqlite_engine(url: URL) -> AsyncEngine:
    if url.drivername != "sqlite+aiosqlite":
        url = url.set(drivername="sqlite+aiosqlite")
    database = url.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        try:
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the folder for the database {describe(url)} ({exc.strerror}); "
                "check that the data directory (SWITCHBOARD_DATA_DIR) is writable"
            ) from exc
    engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    sync_engine = engine.sync_engine

    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transactions out of the driver's hands so that BEGIN is ours (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")  # safe with WAL: a crash loses no committed data of a consistent db
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get("switchboard_write")
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _postgres_engine(url: URL) -> AsyncEngine:
    if url.drivername != "postgresql+asyncpg":
        url = url.set(drivername="postgresql+asyncpg")
    return create_async_engine(
        url, pool_pre_ping=True, pool_size=10, max_overflow=20, connect_args={"timeout": CONNECT_TIMEOUT_S}
    )
