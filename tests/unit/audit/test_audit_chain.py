"""The audit chain on SQLite and on a real PostgreSQL: records are chained and checkpointed, the
database refuses edits and deletes, and `verify` names the first bad seq after an attacker who
may drop the triggers edits, deletes, reorders or cuts the tail; a retention prune keeps it whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import text

from switchboard.audit.chain import now_ts
from switchboard.audit.keys import public_text
from switchboard.audit.verify import verify
from switchboard.audit.writer import Auditor, AuditSettings
from switchboard.errors import StoreError
from switchboard.store import open_store
from switchboard.store.governance.audit_log import AuditStore, Pending


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
async def store(store_url):
    opened = await open_store(store_url)
    try:
        yield opened
    finally:
        await opened.close()


KEY = Ed25519PrivateKey.generate()
PUBLIC = public_text(KEY)


def _records(n: int, start: int = 0, ts: str | None = None) -> list[Pending]:
    users = ("ann@example.com", "bob@example.com")
    return [
        Pending(
            ts or now_ts(),
            {
                "kind": "tool_call",
                "user": users[i % 2],
                "server": "probe",
                "tool": "probe_echo",
                "decision": "allow",
                "n": i,
            },
        )
        for i in range(start, start + n)
    ]


async def _filled(store, n: int = 30, every: int = 10) -> AuditStore:
    audit = AuditStore(store, KEY, checkpoint_every=every)
    await audit.append(_records(n))
    return audit


async def _attack(store, *statements: str) -> None:
    """What someone with the database's owner rights does: switch the triggers off, then edit."""

    def work(conn):
        if conn.dialect.name == "postgresql":
            for table in ("audit_records", "audit_checkpoints", "audit_prunes"):
                conn.execute(text(f"ALTER TABLE {table} DISABLE TRIGGER USER"))
        else:
            names = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'audit_%'"))
            for (name,) in names.all():
                conn.execute(text(f"DROP TRIGGER {name}"))
        for statement in statements:
            conn.execute(text(statement))

    await store.transaction("attack", work)


async def _refused(store, statement: str) -> str:
    """The database's own words for refusing `statement` (the store's error wraps them)."""
    with pytest.raises(StoreError) as caught:
        await store.transaction("tamper", lambda conn: conn.execute(text(statement)))
    return str(caught.value.__cause__)


async def test_a_whole_chain_verifies_with_a_checkpoint_every_n_records(store):
    audit = await _filled(store, 25, every=10)
    checkpoints = await audit.checkpoints()
    assert [cp.seq for cp in checkpoints] == [10, 20]
    made = await audit.checkpoint()
    assert made is not None and made.seq == 25 and await audit.checkpoint() is None  # one per tail
    verdict = await verify(audit, PUBLIC)
    assert verdict.ok and verdict.checked == 25 and verdict.checkpoints == 3 and verdict.last_seq == 25


async def test_the_database_refuses_updates_and_deletes(store):
    audit = await _filled(store, 12)
    for statement in (
        "UPDATE audit_records SET body = 'x' WHERE seq = 3",
        "DELETE FROM audit_records WHERE seq = 12",
        "DELETE FROM audit_records",
        "UPDATE audit_checkpoints SET hash = 'x'",
        "DELETE FROM audit_checkpoints",
        "INSERT INTO audit_prunes (through_seq, ts) VALUES (5, '2026-01-01')",  # not a checkpoint's seq
    ):
        why = await _refused(store, statement)
        assert "append-only" in why or "must be a checkpoint" in why, statement
    if store.dialect == "postgresql":
        assert "append-only" in await _refused(store, "TRUNCATE audit_records")
    assert (await verify(audit, PUBLIC)).ok


async def test_an_edited_record_is_named(store):
    audit = await _filled(store)
    await _attack(store, "UPDATE audit_records SET body = replace(body, 'bob@', 'eve@') WHERE seq = 14")
    verdict = await verify(audit, PUBLIC)
    assert not verdict.ok and verdict.bad_seq == 14 and "edited" in verdict.why


async def test_an_edited_column_is_named(store):
    audit = await _filled(store)
    await _attack(store, "UPDATE audit_records SET decision = 'deny' WHERE seq = 7")
    verdict = await verify(audit, PUBLIC)
    assert not verdict.ok and verdict.bad_seq == 7


async def test_a_rewritten_hash_breaks_the_next_link(store):
    audit = await _filled(store)
    await _attack(store, "UPDATE audit_records SET hash = '" + "a" * 64 + "' WHERE seq = 4")
    verdict = await verify(audit, PUBLIC)
    assert not verdict.ok and verdict.bad_seq == 4


async def test_a_deleted_record_is_named(store):
    audit = await _filled(store)
    await _attack(store, "DELETE FROM audit_records WHERE seq = 17")
    verdict = await verify(audit, PUBLIC)
    assert not verdict.ok and verdict.bad_seq == 17 and "missing" in verdict.why


async def test_reordered_records_are_named(store):
    audit = await _filled(store)
    await _attack(
        store,
        "UPDATE audit_records SET seq = -1 WHERE seq = 8",
        "UPDATE audit_records SET seq = 8 WHERE seq = 9",
        "UPDATE audit_records SET seq = 9 WHERE seq = -1",
    )
    verdict = await verify(audit, PUBLIC)
    assert not verdict.ok and verdict.bad_seq == 8


async def test_a_tail_cut_after_a_checkpoint_is_named(store):
    audit = await _filled(store, 30, every=10)
    await _attack(store, "DELETE FROM audit_records WHERE seq > 24")
    verdict = await verify(audit, PUBLIC)
    assert not verdict.ok and verdict.bad_seq == 25 and "checkpoint" in verdict.why


async def test_a_checkpoint_signed_by_another_key_is_named(store):
    audit = await _filled(store, 20, every=10)
    verdict = await verify(audit, public_text(Ed25519PrivateKey.generate()))
    assert not verdict.ok and verdict.bad_seq == 10 and "signed" in verdict.why


async def test_verify_from_a_seq_checks_only_from_there(store):
    audit = await _filled(store)
    await _attack(store, "UPDATE audit_records SET body = replace(body, 'bob@', 'eve@') WHERE seq = 2")
    assert (await verify(audit, PUBLIC, from_seq=5)).ok
    assert (await verify(audit, PUBLIC, from_seq=1)).bad_seq == 2


async def test_retention_prunes_whole_checkpointed_spans_and_says_so(store):
    audit = AuditStore(store, KEY, checkpoint_every=10)
    old = (datetime.now(UTC) - timedelta(days=40)).isoformat().replace("+00:00", "Z")
    await audit.append(_records(25, ts=old))
    await audit.append(_records(5, start=25))
    auditor = Auditor(KEY, AuditSettings(retention_days=30))
    auditor.use(audit)
    assert await auditor.prune() == 20  # the newest checkpoint older than 30 days; 21..25 stay (old, not checkpointed)
    rows = await audit.page(0, 100)
    assert rows[0][0] == 21 and rows[-1][3] == "audit_pruned" and '"through_seq":20' in rows[-1][-1]
    assert await auditor.prune() is None
    verdict = await verify(audit, PUBLIC)
    assert verdict.ok and verdict.checked == 11  # 21..30 and the prune record
    assert "append-only" in await _refused(store, "DELETE FROM audit_records WHERE seq = 21")  # above the boundary
    await _attack(store, "DELETE FROM audit_records WHERE seq = 21")
    assert (await verify(audit, PUBLIC)).bad_seq == 21


async def test_a_user_is_recorded_once_per_deployment(store):
    audit = AuditStore(store, KEY)
    first, second = Auditor(KEY), Auditor(KEY)  # two processes
    for auditor in (first, second):
        auditor.use(audit)
        auditor.user_seen("ann@example.com")
        auditor.user_seen("ann@example.com")
        await auditor.flush()
    rows = await audit.page(0, 100)
    assert [(r[3], r[4]) for r in rows] == [("user_seen", "ann@example.com")]
