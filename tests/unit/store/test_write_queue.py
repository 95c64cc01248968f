"""SQLite has one writer at a time. The conversation store's own writes run on its single writer
thread; the other writers of the database (users' credentials, API tokens) go through the async
engine, and take turns there in the app, in order, instead of each holding a pooled connection
while SQLite's busy handler sleeps between retries (under load that held every pooled connection
and requests failed on the pool's or the busy timeout)."""

import asyncio

from switchboard.store import open_store
from switchboard.store.credentials import CredentialRecords

WRITERS = 40  # more than the pool's 5 connections plus 10 overflow


async def test_waiting_sqlite_writers_hold_no_pooled_connection(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db")
    records = CredentialRecords(store._engine, store.url)  # as the credential vault opens them
    pool = store._engine.sync_engine.pool
    try:
        most = 0

        async def watch() -> None:
            nonlocal most
            while True:
                most = max(most, pool.checkedout())
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        await asyncio.gather(*(records.put(f"server-{k}", f"user-{n}@example.com", "token", f"sealed-{n}-{k}")
                               for n in range(WRITERS) for k in range(3)))  # fmt: skip
        watcher.cancel()
        assert most == 1  # one writer at a time; without the turn, every waiting writer held a connection
        pairs = [(n, k) for n in range(WRITERS) for k in range(3)]
        stored = [await records.get(f"server-{k}", f"user-{n}@example.com", "token") for n, k in pairs]
        assert stored == [f"sealed-{n}-{k}" for n, k in pairs]
    finally:
        await store.close()
