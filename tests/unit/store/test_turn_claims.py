"""A turn's claim on its conversation (`live_turns`, several processes on one Postgres) is deleted by
the transaction that stores the answer's last message: a process killed right after it leaves the
conversation free. Only that process's claim goes, and a write that is refused releases nothing.
SQLite and a real Postgres (the one-statement path there, and the transaction)."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from switchboard.errors import BadRequest
from switchboard.store import NewMessage
from switchboard.store.engine import make_engine


async def claims(url: str) -> dict[str, str]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(text("SELECT conversation_id, process_id FROM live_turns"))
            return {cid: pid for cid, pid in rows}
    finally:
        await engine.dispose()


async def claim(url: str, conversation_id: str, process_id: str) -> None:
    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO live_turns (conversation_id, owner, process_id, started_at) "
                    "VALUES (:c, 'ann@example.com', :p, :t)"
                ),
                {"c": conversation_id, "p": process_id, "t": datetime.now(UTC)},
            )
    finally:
        await engine.dispose()


async def asked(store, cid: str) -> None:
    await store.create_conversation(id=cid, owner="ann@example.com", title="t", model="m", compliance_level=None)
    await store.add_message(cid, id=f"{cid}-q", parent_id=None, role="user", content="q")


@pytest.mark.parametrize("batch", ["alone", "with its tool results"])
async def test_the_answers_last_write_deletes_its_processes_claim_and_no_other(store, store_url, batch):
    for cid, process in (("conv-1", "p-1"), ("conv-2", "p-2")):
        await asked(store, cid)
        await claim(store_url, cid, process)
    answer = [NewMessage("a1", "conv-1-q", "assistant", "done", {"finish_reason": "stop"})]
    if batch != "alone":  # (Postgres: a transaction, where one message alone is one statement)
        answer = [
            NewMessage("c1", "conv-1-q", "assistant", "", {"tool_calls": []}),
            NewMessage("t1", "c1", "tool", "r"),
            NewMessage("a1", "t1", "assistant", "done", {"finish_reason": "stop"}),
        ]

    await store.append("conv-1", answer, release_claim="p-1")

    assert await claims(store_url) == {"conv-2": "p-2"}  # (no explicit release ran: the process may be gone now)
    assert (await store.get_conversation("conv-1")).leaf_id == "a1"
    # Another process's claim (a turn that started there since) stays.
    await claim(store_url, "conv-1", "p-3")
    await store.append(
        "conv-2", [NewMessage("a2", "conv-2-q", "assistant", "x", {"finish_reason": "stop"})], release_claim="p-9"
    )
    assert await claims(store_url) == {"conv-1": "p-3", "conv-2": "p-2"}


@pytest.mark.parametrize("batch", ["alone", "with its tool results"])
async def test_a_refused_write_keeps_the_claim(store, store_url, batch):
    await asked(store, "conv-1")
    await claim(store_url, "conv-1", "p-1")
    answer = [NewMessage("a1", "nowhere", "assistant", "done", {"finish_reason": "stop"})]
    if batch != "alone":
        answer = [NewMessage("c1", "conv-1-q", "assistant", "", {}), NewMessage("a1", "nowhere", "assistant", "done")]
    with pytest.raises(BadRequest):
        await store.append("conv-1", answer, release_claim="p-1")
    assert await claims(store_url) == {"conv-1": "p-1"}
    assert (await store.get_conversation("conv-1")).leaf_id == "conv-1-q"
