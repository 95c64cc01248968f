"""SQLite has one writer at a time: the writers of one process take turns in the app, in order,
instead of each holding a pooled connection while SQLite's busy handler sleeps between retries
(under load that held every pooled connection and turns failed on the pool's or the busy timeout)."""

import asyncio

from switchboard.store import open_store

WRITERS = 40  # more than the pool's 5 connections plus 10 overflow


async def test_waiting_sqlite_writers_hold_no_pooled_connection(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db")
    try:
        for n in range(WRITERS):
            await store.create_conversation(id=f"conv-{n:04d}", owner="ann@example.com", title="t", model=None,
                                            compliance_level=None)  # fmt: skip
        most = 0
        # Writes run on the store's own writer thread (a sqlite3 engine) or, for the rest, on the
        # async engine's pool: count the connections checked out of both.
        threads = store._sqlite_threads()
        pools = [store._engine.sync_engine.pool] + ([threads.engine.pool] if threads is not None else [])

        async def watch() -> None:
            nonlocal most
            while True:
                most = max(most, sum(pool.checkedout() for pool in pools))
                await asyncio.sleep(0)

        watcher = asyncio.create_task(watch())
        await asyncio.gather(*(store.add_message(f"conv-{n:04d}", id=f"m-{n}-{k}", parent_id=None, role="user",
                                                 content="hello") for n in range(WRITERS) for k in range(3)))  # fmt: skip
        watcher.cancel()
        assert most == 1  # one writer at a time; before, every waiting writer held a connection
        stored = [len(await store.messages(f"conv-{n:04d}")) for n in range(WRITERS)]
        assert stored == [3] * WRITERS
    finally:
        await store.close()
