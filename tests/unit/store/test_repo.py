"""Every method of ConversationStore, on SQLite and on a real Postgres."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from switchboard.errors import BadRequest, Conflict, NotFound
from switchboard.store import UNSET, active_path, latest_leaf, open_store


async def new(store, id="conv-1", owner="ann@example.com", title="Trip plans", level="internal"):
    return await store.create_conversation(id=id, owner=owner, title=title, model="gpt-x", compliance_level=level)


async def test_create_and_get(store):
    made = await new(store)
    assert made.levels_used == ("internal",) and made.message_count == 0 and made.leaf_id is None
    assert made.created_at.tzinfo is not None and made.created_at.utcoffset() == timedelta(0)
    got = await store.get_conversation("conv-1")
    assert got == made
    assert got.created_at.tzinfo is not None and got.created_at.utcoffset() == timedelta(0)
    assert await store.get_conversation("nope") is None


async def test_no_level_is_stored_as_null(store):
    made = await new(store, level=None)
    assert (await store.get_conversation(made.id)).levels_used == (None,)


async def test_create_twice_is_a_conflict(store):
    await new(store)
    with pytest.raises(Conflict, match="conv-1"):
        await new(store, owner="bob@example.com")
    assert (await store.get_conversation("conv-1")).owner == "ann@example.com"


async def test_list_is_newest_first_per_owner_and_pages_by_updated_at(store):
    for i in range(5):
        await new(store, id=f"c{i}", title=f"t{i}")
    await new(store, id="other", owner="bob@example.com")
    await store.add_message("c1", id="m1", parent_id=None, role="user", content="hi")  # c1 is now the newest
    listed = await store.list_conversations("ann@example.com")
    assert [c.id for c in listed] == ["c1", "c4", "c3", "c2", "c0"]
    first = await store.list_conversations("ann@example.com", limit=2)
    assert [c.id for c in first] == ["c1", "c4"]
    rest = await store.list_conversations("ann@example.com", limit=10, before=first[-1].updated_at)
    assert [c.id for c in rest] == ["c3", "c2", "c0"]
    assert [c.id for c in await store.list_conversations("bob@example.com")] == ["other"]
    assert await store.list_conversations("nobody@example.com") == []


async def test_update_fields_and_updated_at(store):
    made = await new(store)
    renamed = await store.update_conversation("conv-1", title="Holiday")
    assert renamed.title == "Holiday" and renamed.updated_at == made.updated_at  # a rename does not reorder
    await asyncio.sleep(0.002)
    changed = await store.update_conversation(
        "conv-1", model="gpt-y", compliance_level=None, levels_used=["internal", None], leaf_id="m7"
    )
    assert (changed.model, changed.compliance_level, changed.levels_used, changed.leaf_id) == (
        "gpt-y",
        None,
        ("internal", None),
        "m7",
    )
    assert changed.updated_at > made.updated_at
    assert await store.get_conversation("conv-1") == changed
    assert await store.update_conversation("conv-1") == changed  # nothing given: nothing changes
    assert UNSET is not None and repr(UNSET) == "UNSET"
    with pytest.raises(NotFound):
        await store.update_conversation("nope", title="x")


async def test_add_message_commits_and_moves_the_leaf(store, store_url):
    made = await new(store)
    await asyncio.sleep(0.002)
    u1 = await store.add_message("conv-1", id="u1", parent_id=None, role="user", content="Plan a trip")
    a1 = await store.add_message(
        "conv-1",
        id="a1",
        parent_id="u1",
        role="assistant",
        content="Where to?",
        data={"tool_calls": [], "finish_reason": "stop"},
    )
    assert (u1.seq, a1.seq) == (1, 2)
    # visible at once from another store instance: committed when add_message returned
    other = await open_store(store_url, migrate=False)
    try:
        conv = await other.get_conversation("conv-1")
        assert (conv.leaf_id, conv.message_count) == ("a1", 2)
        assert conv.updated_at > made.updated_at and conv.updated_at == a1.created_at
        stored = await other.messages("conv-1")
    finally:
        await other.close()
    assert stored == [u1, a1]
    assert stored[1].data == {"tool_calls": [], "finish_reason": "stop"}
    assert stored[1].to_api()["finish_reason"] == "stop"


async def test_branches_are_all_kept_in_seq_order(store):
    await new(store)
    add = store.add_message
    await add("conv-1", id="u1", parent_id=None, role="user", content="q1")
    await add("conv-1", id="a1", parent_id="u1", role="assistant", content="r1")
    await add("conv-1", id="u2", parent_id="a1", role="user", content="q2")
    await add("conv-1", id="u2b", parent_id="a1", role="user", content="q2 edited")
    await add("conv-1", id="t1", parent_id="u2b", role="tool", content="42", data={"call_id": "k", "ok": True})
    messages = await store.messages("conv-1")
    assert [(m.id, m.seq) for m in messages] == [("u1", 1), ("a1", 2), ("u2", 3), ("u2b", 4), ("t1", 5)]
    conv = await store.get_conversation("conv-1")
    assert [m.id for m in active_path(messages, conv.leaf_id)] == ["u1", "a1", "u2b", "t1"]
    assert latest_leaf(messages, "u2") == "u2"
    back = await store.update_conversation("conv-1", leaf_id=latest_leaf(messages, "u2"))
    assert [m.id for m in active_path(messages, back.leaf_id)] == ["u1", "a1", "u2"]


async def test_add_message_refusals_change_nothing(store):
    await new(store)
    await new(store, id="conv-2")
    await store.add_message("conv-1", id="u1", parent_id=None, role="user", content="q1")
    with pytest.raises(NotFound):
        await store.add_message("missing", id="x", parent_id=None, role="user", content="q")
    with pytest.raises(BadRequest, match="not in conversation"):
        await store.add_message("conv-2", id="x", parent_id="u1", role="user", content="q")
    with pytest.raises(BadRequest, match="role"):
        await store.add_message("conv-1", id="x", parent_id=None, role="system", content="q")
    with pytest.raises(Conflict):
        await store.add_message("conv-2", id="u1", parent_id=None, role="user", content="q")
    assert (await store.get_conversation("conv-2")).message_count == 0
    assert (await store.get_conversation("conv-1")).leaf_id == "u1"
    assert await store.messages("conv-2") == []


async def test_allowances_and_files(store):
    await new(store)
    await store.add_allowance("conv-1", "files:read")
    await store.add_allowance("conv-1", "files:read")  # twice is fine
    await store.add_allowance("conv-1", "git:log")
    assert await store.allowances("conv-1") == {"files:read", "git:log"}
    assert await store.allowances("other") == set()
    await store.link_file("conv-1", "f2")
    await store.link_file("conv-1", "f1")
    await store.link_file("conv-1", "f1")
    assert await store.files("conv-1") == ["f1", "f2"]
    with pytest.raises(NotFound):
        await store.add_allowance("missing", "k")
    with pytest.raises(NotFound):
        await store.link_file("missing", "f")


async def test_delete_cascades_and_returns_the_files(store):
    await new(store)
    await new(store, id="keep")
    for conv in ("conv-1", "keep"):
        await store.add_message(conv, id=f"{conv}-u", parent_id=None, role="user", content="hello there")
        await store.add_allowance(conv, "k")
        await store.link_file(conv, f"{conv}-file")
    assert await store.delete_conversation("conv-1") == ["conv-1-file"]
    assert await store.get_conversation("conv-1") is None
    assert await store.messages("conv-1") == [] and await store.allowances("conv-1") == set()
    assert await store.files("conv-1") == []
    assert await store.list_conversations("ann@example.com", q="hello") == [await store.get_conversation("keep")]
    assert await store.delete_conversation("conv-1") == []  # gone already: nothing to do
    # the message id is free again: nothing of the old conversation is left behind
    await new(store)
    await store.add_message("conv-1", id="conv-1-u", parent_id=None, role="user", content="again")
    assert [m.id for m in await store.messages("keep")] == ["keep-u"]


async def test_pins(store):
    assert await store.pins() == {}
    assert await store.pin_if_absent("git", "log", "d1", {"description": "Show log"}) == "d1"
    assert await store.pin_if_absent("git", "log", "d2", {"description": "Changed!"}) == "d1"  # first writer wins
    assert await store.pins() == {("git", "log"): ("d1", {"description": "Show log"})}
    await store.replace_pin("git", "log", "d2", {"description": "Changed!"})
    await store.replace_pin("git", "diff", "d3", {"description": "Diff"})
    assert await store.pins() == {
        ("git", "log"): ("d2", {"description": "Changed!"}),
        ("git", "diff"): ("d3", {"description": "Diff"}),
    }


async def test_naive_datetimes_are_refused(store):
    await new(store)
    with pytest.raises(ValueError, match="timezone-aware"):
        await store.list_conversations("ann@example.com", before=datetime(2030, 1, 1))
    assert await store.list_conversations("ann@example.com", before=datetime(2000, 1, 1, tzinfo=UTC)) == []
