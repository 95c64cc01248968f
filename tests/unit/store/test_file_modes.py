"""The SQLite database and its data dir are private to the app's user: other local users
cannot read conversations or token hashes (0600 files in a 0700 folder), whatever the umask."""

from __future__ import annotations

import os
import stat

import pytest

from switchboard.store import open_store


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    old = os.umask(0o022)  # the usual default: files 0644, folders 0755
    try:
        yield
    finally:
        os.umask(old)


async def test_a_new_database_and_its_folder_are_private(tmp_path, open_umask):
    data = tmp_path / "data"
    store = await open_store(f"sqlite+aiosqlite:///{data}/switchboard.db")
    try:
        await store.create_conversation(
            id="c1", owner="ann@example.com", title="secret plans", model=None, compliance_level=None
        )
        files = [data / name for name in ("switchboard.db", "switchboard.db-wal", "switchboard.db-shm")]
        assert all(f.exists() for f in files), sorted(p.name for p in data.iterdir())
        assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}
        assert _mode(data) == 0o700
    finally:
        await store.close()


async def test_an_older_readable_database_is_made_private(tmp_path, open_umask):
    data = tmp_path / "data"
    store = await open_store(f"sqlite+aiosqlite:///{data}/switchboard.db")
    await store.close()
    for path in data.iterdir():
        path.chmod(0o644)
    store = await open_store(f"sqlite+aiosqlite:///{data}/switchboard.db")
    try:
        await store.create_conversation(
            id="c2", owner="ann@example.com", title="more", model=None, compliance_level=None
        )
        assert {p.name: _mode(p) for p in data.iterdir()} == {p.name: 0o600 for p in data.iterdir()}
    finally:
        await store.close()
