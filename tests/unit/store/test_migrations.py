"""Migrations, connection settings and what an unreachable store says."""

import asyncio
import socket

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from switchboard.__main__ import main
from switchboard.errors import StoreUnavailable
from switchboard.store import open_store, upgrade
from switchboard.store.engine import make_engine
from switchboard.store.migrate import MIGRATIONS, migrate
from switchboard.store.models import metadata

HEAD = ScriptDirectory(str(MIGRATIONS)).get_current_head()
SEARCH_TABLES = ("messages_fts", "conversations_fts", "fts_indexed")
SEARCH_INDEXES = ("ix_messages_content_trgm", "ix_conversations_title_trgm")


async def _schema(url):
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars().all()
            diff = await conn.run_sync(lambda c: compare_metadata(MigrationContext.configure(c), metadata))
    finally:
        await engine.dispose()
    # the search tables (SQLite: the indexes and their mark) and indexes (Postgres) exist only in the
    # migrations, on purpose
    diff = [
        d
        for d in diff
        if not (d[0] == "remove_table" and d[1].name.startswith(SEARCH_TABLES))
        and not (d[0] == "remove_index" and d[1].name in SEARCH_INDEXES)
    ]
    return version, diff


async def test_migrations_build_the_models_schema_and_run_twice_as_a_no_op(store_url):
    store = await open_store(store_url)
    await store.create_conversation(id="c1", owner="a", title="kept", model=None, compliance_level=None)
    await store.add_message("c1", id="m1", parent_id=None, role="user", content="still here")
    engine = make_engine(store_url)
    try:
        await migrate(engine)  # again, on a migrated database
    finally:
        await engine.dispose()
    again = await open_store(store_url)
    try:
        assert [m.content for m in await again.messages("c1")] == ["still here"]
        assert await again.list_conversations("a", q="still") != []
    finally:
        await again.close()
        await store.close()
    version, diff = await _schema(store_url)
    assert version == [HEAD]
    assert diff == []


def test_cli_db_upgrade(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path / "new" / "data"))
    monkeypatch.delenv("SWITCHBOARD_DATABASE_URL", raising=False)
    assert main(["db", "upgrade"]) == 0
    assert main(["db", "upgrade"]) == 0
    assert (tmp_path / "new" / "data" / "switchboard.db").is_file()
    assert "up to date" in capsys.readouterr().out


def test_upgrade_function_migrates(postgres_url):
    upgrade(postgres_url)
    upgrade(postgres_url)


async def test_sqlite_connections_use_wal_and_foreign_keys(tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/a/b/switchboard.db"  # the folders do not exist yet
    store = await open_store(url)
    await store.close()
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
            assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar() == 1
            check = "INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')"
            await conn.execute(text(check))  # raises if the search index and the table disagree
    finally:
        await engine.dispose()


def _closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_unreachable_postgres_is_store_unavailable_naming_it_without_the_password():
    url = f"postgresql+asyncpg://switchboard:hunter2@127.0.0.1:{_closed_port()}/chats"
    with pytest.raises(StoreUnavailable) as caught:
        await open_store(url)
    message = caught.value.message
    assert "hunter2" not in message and "hunter2" not in str(caught.value.action)
    assert "postgresql+asyncpg://switchboard:***@127.0.0.1:" in message and "/chats" in message
    assert "cannot reach" in message and "ConnectionRefusedError" in message
    assert "SWITCHBOARD_DATABASE_URL" in message
    assert caught.value.code == "internal"


async def test_ping(store_url):
    store = await open_store(store_url)
    try:
        await store.ping()
    finally:
        await store.close()
    unusable = f"postgresql+asyncpg://postgres@127.0.0.1:{_closed_port()}/x"
    with pytest.raises(StoreUnavailable, match="cannot reach"):
        await open_store(unusable, migrate=False)  # without migrating, open_store pings


async def test_wrong_database_name_and_bad_urls(postgres_cluster):
    with pytest.raises(StoreUnavailable, match=r"cannot open .*/no_such_db \(InvalidCatalogNameError\)"):
        await open_store(postgres_cluster.url("no_such_db"))
    with pytest.raises(StoreUnavailable, match="neither SQLite nor Postgres"):
        await open_store("mysql://u:pw@h/db")
    with pytest.raises(StoreUnavailable, match="not a database URL"):
        await open_store("not a url")


async def test_sqlite_folder_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreUnavailable, match="cannot create the folder"):
        await open_store(f"sqlite+aiosqlite:///{blocker}/sub/switchboard.db")


def test_settings_database_url(tmp_path, monkeypatch):
    from switchboard.settings import Settings

    monkeypatch.delenv("SWITCHBOARD_DATABASE_URL", raising=False)
    assert Settings(data_dir=tmp_path).database_url_resolved == f"sqlite+aiosqlite:///{tmp_path}/switchboard.db"
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", "postgresql+asyncpg://u:p@db:5432/switchboard")
    assert Settings(data_dir=tmp_path).database_url_resolved == "postgresql+asyncpg://u:p@db:5432/switchboard"


async def test_processes_starting_together_migrate_once(store_url):
    stores = await asyncio.gather(*(open_store(store_url) for _ in range(3)))
    try:
        await stores[0].create_conversation(id="c1", owner="a", title="t", model=None, compliance_level=None)
        assert (await stores[2].get_conversation("c1")).title == "t"
    finally:
        for store in stores:
            await store.close()
    version, diff = await _schema(store_url)
    assert version == [HEAD] and diff == []


def test_the_head_read_from_the_files_is_alembics():
    from switchboard.store.migrate import head_revision

    assert head_revision() == HEAD


def test_a_database_at_the_newest_revision_opens_without_loading_alembic(tmp_path):
    """Alembic's imports (about a third of a second) are paid only when there is something to migrate."""
    import subprocess
    import sys

    url = f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite'}"
    code = (
        "import asyncio, sys; from switchboard.store import open_store\n"
        "async def main():\n    store = await open_store(sys.argv[1]); await store.close()\n"
        "asyncio.run(main()); print('alembic' in sys.modules)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True, timeout=60) for _ in range(2)
    ]
    assert [r.stdout.strip() for r in runs] == ["True", "False"], [r.stderr[-500:] for r in runs]
