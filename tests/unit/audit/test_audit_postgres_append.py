"""The audit append on a real PostgreSQL: one round trip on the wire once the process knows the
chain's end, and one chain still when another process appended meanwhile (the append finds the
end moved and seals the batch again after it)."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import text

from switchboard.audit.chain import now_ts
from switchboard.audit.keys import public_text
from switchboard.audit.verify import verify
from switchboard.store import open_store
from switchboard.store.governance.audit_log import AuditStore, Pending
from tests.support.pg_wire import counting_relay

KEY = Ed25519PrivateKey.generate()


def _records(n: int, user: str = "ann@example.com") -> list[Pending]:
    return [Pending(now_ts(), {"kind": "tool_call", "user": user, "tool": "probe_echo", "n": i}) for i in range(n)]


async def test_an_append_is_one_round_trip_and_holds_no_lock_after(postgres_url):
    async with counting_relay(postgres_url) as (url, wire):
        store = await open_store(url)
        try:
            audit = AuditStore(store, KEY, checkpoint_every=100)
            await audit.append(_records(1))  # the first: the chain's end is read
            await audit.append(_records(3))  # (the statement is prepared on this connection)
            before = wire.round_trips
            for _ in range(5):
                await audit.append(_records(2))
            assert wire.round_trips - before == 5
            held = await store.read(
                "read locks",
                lambda c: c.execute(text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).scalar(),
            )
            assert held == 0
            verdict = await verify(audit, public_text(KEY))
            assert verdict.ok and verdict.checked == 14, verdict
        finally:
            await store.close()


async def test_appends_of_two_processes_in_turn_make_one_chain(postgres_url):
    first_store, second_store = await open_store(postgres_url), await open_store(postgres_url)
    try:
        first, second = (
            AuditStore(first_store, KEY, checkpoint_every=7),
            AuditStore(second_store, KEY, checkpoint_every=7),
        )
        for round_ in range(6):  # each append finds the end where the other one left it
            assert (await first.append(_records(2, "ann@example.com")))[0] == round_ * 5 + 2
            assert (await second.append(_records(3, "bob@example.com")))[0] == round_ * 5 + 5
        verdict = await verify(first, public_text(KEY))
        assert verdict.ok and verdict.checked == 30 and verdict.checkpoints >= 3, verdict
        users = [row[4] for row in await first.page(0, 100)]
        assert users == (["ann@example.com"] * 2 + ["bob@example.com"] * 3) * 6
    finally:
        await first_store.close()
        await second_store.close()
