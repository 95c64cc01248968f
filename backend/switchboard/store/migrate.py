"""Schema migrations (Alembic, numbered files in ``migrations/versions``), run in code.

Several processes may start at once: on Postgres the upgrade holds an advisory lock, on SQLite
the write lock (``BEGIN IMMEDIATE``), so one migrates and the others then find nothing to do."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

from .engine import WRITE, make_engine, unavailable

__all__ = ["migrate", "upgrade"]

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_LOCK_KEY = 0x5B_57_0E  # pg_advisory_xact_lock key for "switchboard store migrations"


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(_config(connection), "head")


async def migrate(engine: AsyncEngine) -> None:
    """Bring the schema to the newest revision; a no-op when it is there already."""
    async with engine.execution_options(**WRITE).begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        await connection.run_sync(_upgrade)


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
