"""A write that fails is a StoreError in the user's words; a server that is gone is StoreUnavailable."""

import asyncio

import asyncpg
import pytest
from sqlalchemy import func, select, text

from switchboard.errors import StoreError, StoreUnavailable
from switchboard.store import open_store
from switchboard.store.engine import WRITE, make_engine
from switchboard.store.pg_driver import pg_call
from tests.support.postgres import PostgresCluster

SQLITE_REFUSE = "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'secret driver text'); END"
POSTGRES_REFUSE = "ALTER TABLE messages ADD CONSTRAINT secret_driver_text CHECK (length(content) < 0)"


async def test_a_failed_write_is_a_store_error_and_changes_nothing(store, store_url):
    await store.create_conversation(id="c1", owner="a", title="t", model=None, compliance_level=None)
    engine = make_engine(store_url)
    try:
        async with engine.execution_options(**WRITE).begin() as conn:
            await conn.execute(text(SQLITE_REFUSE if store_url.startswith("sqlite") else POSTGRES_REFUSE))
    finally:
        await engine.dispose()
    with pytest.raises(StoreError) as caught:
        await store.add_message("c1", id="m1", parent_id=None, role="user", content="hello")
    assert not isinstance(caught.value, StoreUnavailable)
    assert caught.value.message.startswith("Could not save the message: the conversation store failed (")
    assert "secret" not in caught.value.message and "INSERT" not in caught.value.message
    conv = await store.get_conversation("c1")
    assert (conv.message_count, conv.leaf_id) == (0, None)  # the whole transaction was rolled back


async def test_a_write_after_the_server_stopped_is_store_unavailable(postgres_cluster):
    own = PostgresCluster(postgres_cluster.bin_dir)
    own.start()
    try:
        store = await open_store(own.create_database())
        await store.create_conversation(id="c1", owner="a", title="t", model=None, compliance_level=None)
    finally:
        own.stop()
    try:
        with pytest.raises(StoreUnavailable, match=r"cannot reach the conversation store at postgresql\+asyncpg://"):
            await store.add_message("c1", id="m1", parent_id=None, role="user", content="hello")
        with pytest.raises(StoreUnavailable):
            await store.ping()
    finally:
        await store.close()


async def test_connections_the_server_closed_are_replaced_without_an_error(postgres_url):
    # A Postgres restart (here: the server ending every session of the database) leaves the pool
    # holding closed connections; the next one-statement call and read check out fresh ones.
    store = await open_store(postgres_url)
    try:
        await store.create_conversation(id="c1", owner="a", title="t", model=None, compliance_level=None)
        await store.add_message("c1", id="m1", parent_id=None, role="user", content="one")
        admin = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            ended = await admin.fetchval(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()) AS t"
            )
            assert ended >= 1  # the pool's connections
            for _ in range(200):  # until the server has ended them
                others = await admin.fetchval(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
                if others == 0:
                    break
                await asyncio.sleep(0.01)
        finally:
            await admin.close()
        await asyncio.sleep(0.05)  # the client side reads the sockets' end
        await store.add_message("c1", id="m2", parent_id="m1", role="assistant", content="two")
        conversation = await store.get_conversation("c1")
        assert conversation is not None and (conversation.message_count, conversation.leaf_id) == (2, "m2")
    finally:
        await store.close()


async def test_a_call_cancelled_while_postgres_runs_it_leaves_the_pool_usable(postgres_url):
    # A turn stopped while its store call waits on the server: the connection goes back to the pool
    # (or is dropped) and the calls after it work.
    store = await open_store(postgres_url)
    try:
        await store.create_conversation(id="c1", owner="a", title="t", model=None, compliance_level=None)
        slow = select(func.pg_sleep(5))
        call = asyncio.ensure_future(
            pg_call(store._engine.sync_engine, store._pg_prepared, lambda driver: driver.execute(slow, {}).first())
        )
        await asyncio.sleep(0.3)  # the statement is on the server
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        for i in range(3):
            await store.add_message("c1", id=f"m{i}", parent_id=f"m{i - 1}" if i else None, role="user", content="x")
        conversation = await store.get_conversation("c1")
        assert conversation is not None and conversation.message_count == 3
        assert store._engine.sync_engine.pool.checkedout() == 0
    finally:
        await store.close()
