"""Tool trust kept in the store (tool_trust): shared by every process, first approval wins, an
administrator's decision made at the same moment as another's is refused, and the pins of
earlier versions (migration 0010, the old pins file) keep approving what they approved."""

from __future__ import annotations

import asyncio
import hashlib
import json

import mcp_types
import pytest
from alembic import command

from switchboard.errors import Conflict
from switchboard.store import open_store
from switchboard.store.engine import make_engine
from switchboard.store.governance.trust_rows import TrustRows
from switchboard.store.migrate import _config
from switchboard.tools.trust import Trust
from switchboard.tools.trust_pin import legacy_hash

SCHEMA = {"type": "object"}


def listed(description: str, name: str = "t") -> mcp_types.Tool:
    return mcp_types.Tool(name=name, description=description, inputSchema=SCHEMA)


def see(trust: Trust, tool: mcp_types.Tool, mode="auto", server="s") -> tuple[str, str]:
    pin, definition = trust.pin(server, tool, "")
    return trust.state(server, tool.name, pin, definition, mode), pin


async def done(*trusts: Trust) -> None:
    """Every write the trusts started is in the store before it closes (a write still running
    when its store closed left a connection out of the pool, found later by the garbage collector)."""
    for trust in trusts:
        await trust.flush()


async def test_the_first_approval_wins_and_a_later_process_sees_the_other_definition_changed(store_url):
    one, two = await open_store(store_url), await open_store(store_url)
    changes: list[str] = []
    try:
        early, late = Trust(), Trust(on_change=changes.append)
        await early.use(TrustRows(one))
        await late.use(TrustRows(two))  # loaded before either approved anything
        assert see(early, listed("the trusted one"))[0] == "approved"
        await early.flush()
        assert see(late, listed("a different one"))[0] == "approved"  # as far as it knows: the first one
        await late.flush()
        assert changes == ["s"]  # it learnt that another definition was approved first
        assert see(late, listed("a different one"))[0] == "changed"
        assert see(late, listed("the trusted one"))[0] == "approved"
        await done(early, late)
    finally:
        await one.close()
        await two.close()


async def test_review_leaves_a_new_tool_pending_until_approved_for_every_process(store_url):
    one, two = await open_store(store_url), await open_store(store_url)
    try:
        admin, other = Trust(), Trust()
        await admin.use(TrustRows(one))
        await other.use(TrustRows(two))
        state, pin = see(admin, listed("new"), mode="review")
        assert state == "pending"
        with pytest.raises(Conflict, match="no longer the definition"):
            await admin.decide(
                "approve", server="s", tool="t", qualified_name="s_t", pin="0" * 64, by="root", before_state=state
            )
        decision = await admin.decide(
            "approve", server="s", tool="t", qualified_name="s_t", pin=pin, by="root", before_state=state
        )
        assert (decision.kind, decision.pin, decision.by, decision.before_state) == ("approve", pin, "root", "pending")
        assert see(other, listed("new"), mode="review")[0] == "pending"  # not told yet
        await other.refresh("s")  # what the relay's notice does
        assert see(other, listed("new"), mode="review")[0] == "approved"
        await admin.decide("block", server="s", tool="t", qualified_name="s_t", pin=pin, by="root", before_state="x")
        await other.refresh("s")
        assert see(other, listed("new"))[0] == "blocked"  # whatever the pin, until approved again
        await done(admin, other)
    finally:
        await one.close()
        await two.close()


class _AllReadFirst:
    """The store, but every decision's read waits until both decisions have read: two
    administrators deciding at the same moment on two processes."""

    def __init__(self, rows: TrustRows, barrier: asyncio.Barrier) -> None:
        self._rows, self._barrier = rows, barrier

    async def records(self, server=None):
        return await self._rows.records(server)

    async def record(self, server, tool):
        found = await self._rows.record(server, tool)
        await self._barrier.wait()
        return found

    async def first(self, record):
        return await self._rows.first(record)

    async def write(self, record, expected_version):
        return await self._rows.write(record, expected_version)


async def test_two_administrators_approving_different_pins_at_once_one_wins_the_other_is_refused(store_url):
    one, two = await open_store(store_url), await open_store(store_url)
    try:
        barrier = asyncio.Barrier(2)
        first, second = Trust(), Trust()
        await first.use(_AllReadFirst(TrustRows(one), barrier))
        await second.use(_AllReadFirst(TrustRows(two), barrier))
        _, pin_a = see(first, listed("version a"), mode="review")  # the server changed between the two lists
        _, pin_b = see(second, listed("version b"), mode="review")
        results = await asyncio.gather(
            first.decide("approve", server="s", tool="t", qualified_name="s_t", pin=pin_a, by="a", before_state="p"),
            second.decide("approve", server="s", tool="t", qualified_name="s_t", pin=pin_b, by="b", before_state="p"),
            return_exceptions=True,
        )
        refused = [r for r in results if isinstance(r, Conflict)]
        assert len(refused) == 1 and "at the same moment" in refused[0].message
        winner = next(r for r in results if not isinstance(r, Exception))
        stored = await TrustRows(one).record("s", "t")
        assert stored.pin == winner.pin and stored.decided_by == winner.by
        await done(first, second)
    finally:
        await one.close()
        await two.close()


async def test_pins_of_an_older_version_keep_approving_the_same_definition(store_url, tmp_path):
    """Migration 0010: a tool pinned before (tool_pins) stays approved while its definition is the
    same (and is then re-pinned with the full pin); a different one waits for an administrator."""
    same = {"description": "kept", "input_schema": SCHEMA, "annotations": {}}
    old = hashlib.sha256(json.dumps(same, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    engine = make_engine(store_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(_config(c), "0009"))
            for tool in ("t", "u", "t#ui"):
                await conn.exec_driver_sql(
                    "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) "
                    f"VALUES ('s', '{tool}', '{old}', '{json.dumps(same)}', '2026-01-01 00:00:00')"
                )
    finally:
        await engine.dispose()
    store = await open_store(store_url)  # migrates to the head
    try:
        assert legacy_hash({**same, "name": "t"}) == old
        trust = Trust()
        await trust.use(TrustRows(store))
        assert see(trust, listed("kept"))[0] == "approved"
        assert see(trust, listed("changed", name="u"))[0] == "changed"
        await trust.flush()
        stored = await TrustRows(store).records()
        assert not stored[("s", "t")].pin.startswith("legacy:")  # re-pinned with the full pin
        assert stored[("s", "u")].pin == f"legacy:{old}"
        assert ("s", "t#ui") not in stored and ("s", "t#ui") in await store.pins()  # app pins stay pins
    finally:
        await store.close()


async def test_a_pins_file_of_an_older_version_is_imported_once(store_url, tmp_path):
    legacy = tmp_path / "tool-pins.json"
    digest = legacy_hash({"description": "kept", "input_schema": SCHEMA, "annotations": {}})
    legacy.write_text(json.dumps({"s/t": {"hash": digest, "definition": {"description": "kept"}}}))
    store = await open_store(store_url)
    try:
        trust = Trust()
        await trust.use(TrustRows(store), legacy_file=legacy)
        assert see(trust, listed("kept"))[0] == "approved"
        assert see(Trust(), listed("x"))[0] == "approved"  # (a fresh host approves a first definition)
        assert not legacy.exists() and (tmp_path / "tool-pins.json.imported").exists()
        other = Trust()
        await other.use(TrustRows(store))
        assert see(other, listed("changed"))[0] == "changed"
        await done(trust, other)
    finally:
        await store.close()
