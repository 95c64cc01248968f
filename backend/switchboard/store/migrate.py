"""Schema migrations (Alembic, numbered files in ``migrations/versions``), run in code.

Several processes may start at once: on Postgres the upgrade holds an advisory lock, on SQLite
the write lock (``BEGIN IMMEDIATE``), so one migrates and the others then find nothing to do."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from .engine import WRITE, make_engine, unavailable

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["head_revision", "migrate", "upgrade"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_BUSY_ATTEMPTS = 8  # about 25 s of waiting in all
_LOCK_KEY = 0x5B_57_0E  # pg_advisory_xact_lock key for "switchboard store migrations"


def _config(connection: Connection) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    if _at_head(connection):
        return  # the usual start: Alembic (a third of a second of imports) is not even loaded
    from alembic import command

    command.upgrade(_config(connection), "head")


def _at_head(connection: Connection) -> bool:
    if not inspect(connection).has_table("alembic_version"):
        return False
    head = head_revision()
    return head is not None and connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [
        head
    ]


@cache
def head_revision() -> str | None:
    """The newest revision in ``migrations/versions``, read from the files without Alembic
    (the one that no other revision names as its ``down_revision``); None when that is not
    one revision (then Alembic decides)."""
    revisions, parents = set(), set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        if (found := re.search(r"^revision\b[^=\n]*=\s*[\"']([^\"']+)[\"']", source, re.M)) is not None:
            revisions.add(found[1])
        for line in re.findall(r"^down_revision\b[^=\n]*=(.*)$", source, re.M):
            parents.update(re.findall(r"[\"']([^\"']+)[\"']", line))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision; a no-op when it is there already."""
    for attempt in range(_BUSY_ATTEMPTS):
        try:
            async with engine.execution_options(**WRITE).begin() as connection:
                if connection.dialect.name == "postgresql":
                    await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
                await connection.run_sync(_upgrade)
            return
        except OperationalError as exc:
            # A brand-new SQLite file: switching it to WAL needs the file to itself, and SQLite
            # answers "busy" at once (no busy wait) while another process creates the schema.
            if not _sqlite_busy(exc) or attempt == _BUSY_ATTEMPTS - 1:
                raise
            await asyncio.sleep(0.1 * 2**attempt)


def _sqlite_busy(exc: OperationalError) -> bool:
    code = getattr(exc.orig, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def upgrade(url: str) -> None:
    """``switchboard db upgrade``: migrate the database at ``url`` and return."""

    async def run() -> None:
        engine = make_engine(url)
        try:
            await migrate(engine)
        except Exception as exc:
            raise unavailable(url, exc, "migrate") from exc
        finally:
            await engine.dispose()

    asyncio.run(run())
