"""Several app processes on one real PostgreSQL (two hubs, each with its relay and its own store
connection, in one event loop): a process killed right after its answer's `message_done` leaves
the conversation free for the next message on another process (the claim went with the answer's
last write), and a conversation whose claim is held by a process that stopped says so, with when
it is released, instead of "an answer is still being written"."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from switchboard.chat.relay.postgres import PostgresRelay
from switchboard.chat.relay.seam import Turn
from switchboard.errors import BadRequest
from switchboard.store import open_store
from switchboard.store.engine import make_engine
from switchboard.store.live import LiveTurns
from tests.support.scripted_llm import ScriptedLLM
from tests.unit.chat.test_turn_hub import ANN, GATES, Reader, call, chat
from tests.unit.chat.test_turn_hub import make as make  # a fixture: pytest finds it by this name

LEASE_S = 30.0


class KilledAfterTheAnswer(PostgresRelay):
    """The process is killed right after its turn's `message_done`: what its hub does after the
    answer (release the claim explicitly, tell followers) never runs."""

    async def released(self, turn: Turn) -> None:
        return None


async def on_relay(hub, store, relay_class=PostgresRelay) -> PostgresRelay:
    relay = relay_class(LiveTurns(store), lease_s=LEASE_S)
    await relay.start(hub)
    hub.relay = relay
    return relay


async def test_a_process_killed_right_after_message_done_leaves_the_conversation_free(make, postgres_url):
    first_store, second_store = await open_store(postgres_url), await open_store(postgres_url)
    GATES["g"] = asyncio.Event()
    GATES["g"].set()
    killed = await make(ScriptedLLM([call("box_wait", gate="g")], ["Done."]), store=first_store)
    other = await make(ScriptedLLM(["Still here."]), store=second_store)
    await on_relay(killed, first_store, KilledAfterTheAnswer)  # (each hub stops its relay at the end)
    await on_relay(other, second_store)
    done = (await Reader(await killed.start(ANN, chat(conversation_id="conv-claim"), "current")).until("message_done"))[
        -1
    ]
    assert done["finish_reason"] == "stop"
    await asyncio.gather(*killed.tasks())  # the turn has ended there (and its explicit release not run)

    again = await Reader(await other.start(ANN, chat("and now?", conversation_id="conv-claim"), "current")).until(
        "message_done"
    )

    assert again[-1]["finish_reason"] == "stop" and again[-1]["conversation_id"] == done["conversation_id"]
    stored = await second_store.load(done["conversation_id"])
    assert [m.role for m in stored.messages] == ["user", "assistant", "tool", "assistant", "user", "assistant"]


async def test_a_claim_whose_process_stopped_says_so_and_when_it_is_released(postgres_url):
    store = await open_store(postgres_url)
    live = LiveTurns(store)
    holder, asking = PostgresRelay(live, lease_s=LEASE_S), PostgresRelay(LiveTurns(store), lease_s=LEASE_S)
    hub = type("Hub", (), {"running": lambda self, owner, cid: None, "pages": None, "task_questions": None})()
    admin = make_engine(postgres_url)
    try:
        for relay in (holder, asking):
            await relay.start(hub)
        # A live process writes an answer: still being written.
        await holder.claim("conv-live", ANN.email)
        with pytest.raises(BadRequest, match="an answer is still being written in this conversation"):
            await asking.claim("conv-live", ANN.email)
        # A process that missed its heartbeats 20 s ago (the lease is 30 s, heartbeats every 10 s).
        assert await live.claim("conv-stale", ANN.email, "p-stale") is None
        async with admin.begin() as conn:
            await conn.execute(
                text("INSERT INTO app_processes (id, heartbeat_at) VALUES ('p-stale', :t)"),
                {"t": datetime.now(UTC) - timedelta(seconds=20)},
            )
        with pytest.raises(BadRequest) as stale:
            await asking.claim("conv-stale", ANN.email)
        assert stale.value.message == "the process writing this answer stopped; it is released within 20 s"
        # One whose heartbeat is gone altogether: at the next heartbeat of a live process.
        assert await live.claim("conv-gone", ANN.email, "p-gone") is None
        with pytest.raises(BadRequest) as gone:
            await asking.claim("conv-gone", ANN.email)
        assert gone.value.message == "the process writing this answer stopped; it is released within 10 s"
    finally:
        for relay in (holder, asking):
            await relay.stop()
        await admin.dispose()
        await store.close()
