"""Engines for the two backends, with the per-connection settings each needs.

SQLite: WAL (readers never wait for the writer), ``synchronous=NORMAL``, foreign keys ON
(cascades), a busy timeout, and write transactions that start with ``BEGIN IMMEDIATE`` so that two
processes writing the same file queue for the lock instead of failing when a read turns into a
write. Besides the async engine (migrations, tokens, credentials), a file database gets a plain
sqlite3 engine with the same settings (``make_sqlite_sync_engine``): the conversation store runs
each of its transactions as one call on its own threads, one thread hop per transaction instead of
one per statement. Postgres: a connect timeout, and a check before a pooled connection is reused
(the server may have restarted): a connection the server closed is replaced without a round trip,
and one idle for ``PING_AFTER_IDLE_S`` or more is pinged first (one round trip; SQLAlchemy's own
``pool_pre_ping`` made three, BEGIN, a ping and ROLLBACK, on every use)."""

from __future__ import annotations

import os
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.util import await_

from ..errors import StoreUnavailable

__all__ = ["WRITE", "cause_name", "describe", "make_engine", "make_sqlite_sync_engine", "unavailable"]

# Execution option that marks a connection as a writer (SQLite: BEGIN IMMEDIATE).
WRITE = {"switchboard_write": True}
SQLITE_BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_S = 10
PING_AFTER_IDLE_S = 10.0  # a pooled Postgres connection idle this long is pinged before it is used
PING_TIMEOUT_S = 5.0


def describe(url: str | URL) -> str:
    """The URL as it may be shown to people: the password is masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
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


def _sqlite_file(url: URL) -> str | None:
    """The file of a SQLite URL, or None for an in-memory or URI database."""
    database = url.database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


def _private_database(path: Path) -> None:
    """The database's folder (when made here) 0700, the file 0600 whatever the umask; SQLite gives
    its -wal and -shm files the database file's mode. An older, readable file is made private."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with suppress(FileNotFoundError):
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)


def _sqlite_engine(url: URL) -> AsyncEngine:
    if url.drivername != "sqlite+aiosqlite":
        url = url.set(drivername="sqlite+aiosqlite")
    database = _sqlite_file(url)
    if database:
        try:
            _private_database(Path(database).expanduser())
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the folder for the database {describe(url)} ({exc.strerror}); "
                "check that the data directory (SWITCHBOARD_DATA_DIR) is writable"
            ) from exc
    engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
    _configure_sqlite(engine.sync_engine)
    return engine


def make_sqlite_sync_engine(url: str | URL) -> Engine | None:
    """A plain (sqlite3) engine on the same file with the same settings, for transactions run
    whole on the store's own threads; None for a database that is not a file (in memory)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or _sqlite_file(parsed) is None:
        return None
    parsed = parsed.set(drivername="sqlite+pysqlite")
    # A connection moves between the store's threads, one at a time (the pool hands it out).
    engine = create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False})
    _configure_sqlite(engine)
    return engine


def _configure_sqlite(sync_engine: Engine) -> None:
    @event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transactions out of the driver's hands so that BEGIN is ours (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        # With WAL, NORMAL syncs the log at checkpoints, not at every commit: a committed
        # transaction survives the app crashing, but the last ones may be lost if the machine
        # loses power or the OS crashes (the database itself stays consistent).
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get("switchboard_write")
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _postgres_engine(url: URL) -> AsyncEngine:
    if url.drivername != "postgresql+asyncpg":
        url = url.set(drivername="postgresql+asyncpg")
    engine = create_async_engine(url, pool_size=10, max_overflow=20, connect_args={"timeout": CONNECT_TIMEOUT_S})

    @event.listens_for(engine.sync_engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        # Raising DisconnectionError makes the pool drop this connection and hand out a new one.
        driver = dbapi_connection.driver_connection
        if driver.is_closed():  # the server closed it (a restart): asyncpg saw the socket close
            raise DisconnectionError("the server closed the connection")
        if time.monotonic() - record.info.get("idle_since", time.monotonic()) >= PING_AFTER_IDLE_S:
            try:
                await_(driver.fetchrow(";", timeout=PING_TIMEOUT_S))  # outside a transaction: one round trip
            except Exception as exc:
                raise DisconnectionError("the connection did not answer a ping") from exc

    return engine
