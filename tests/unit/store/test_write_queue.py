"""SQLite has one writer at a time. Every writer of the database (conversations, users' credentials,
API tokens, tasks) goes through the store's one path, `_run`, and so through its single writer
thread: writers queue there, in order, instead of each holding a pooled connection while SQLite's
busy handler sleeps between retries (under load that held every pooled connection and requests
failed on the pool's or the busy timeout)."""

import asyncio

from switchboard.store import open_store
from switchboard.store.credentials import CredentialRecords

WRITERS = 40  # more than the pool's 5 connections plus 10 overflow


async def test_waiting_sqlite_writers_hold_no_pooled_connection(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db")
    records = CredentialRecords(store)  # as the credential vault opens them
    await records.get("warm", "up@example.com", "token")  # the store's own engine and threads exist now
    pools = [store._engine.sync_engine.pool, store._threads.engine.pool]
    try:
        most = 0

        async def watch() -> None:
            nonlocal most
            while True:
                most = max(most, sum(pool.checkedout() for pool in pools))
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        await asyncio.gather(
            *(
                records.put(f"server-{k}", f"user-{n}@example.com", "token", f"sealed-{n}-{k}")
                for n in range(WRITERS)
                for k in range(3)
            )
        )
        watcher.cancel()
        # the writer thread's own connection and the one the warm-up read left on its reader thread
        # (each store thread keeps one open); without the one path, every waiting writer held one
        assert most <= 2
        pairs = [(n, k) for n in range(WRITERS) for k in range(3)]
        stored = [await records.get(f"server-{k}", f"user-{n}@example.com", "token") for n, k in pairs]
        assert stored == [f"sealed-{n}-{k}" for n, k in pairs]
    finally:
        await store.close()
