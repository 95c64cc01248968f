"""A conversation's outline (no text) and a page of it, on SQLite and on a real Postgres."""

import pytest

from switchboard.errors import NotFound
from switchboard.store import page_of


@pytest.fixture
async def branched(store):
    """m0 <- m1 <- m2 <- m3 (shown), and m1 <- m2b (an older branch)."""
    await store.create_conversation(id="conv-pages", owner="ann", title="t", model=None, compliance_level=None)
    add = store.add_message
    await add("conv-pages", id="m0", parent_id=None, role="user", content="q" * 10)
    await add("conv-pages", id="m1", parent_id="m0", role="assistant", content="a" * 20, data={"finish_reason": "stop"})
    await add("conv-pages", id="m2b", parent_id="m1", role="user", content="old branch")
    await add("conv-pages", id="m2", parent_id="m1", role="user", content="b" * 30)
    await add("conv-pages", id="m3", parent_id="m2", role="assistant", content="c" * 40)
    return store


async def test_the_outline_has_every_message_without_its_text(branched):
    outline = await branched.outline("conv-pages")
    assert [(m.id, m.parent_id, m.seq) for m in outline] == [
        ("m0", None, 1),
        ("m1", "m0", 2),
        ("m2b", "m1", 3),
        ("m2", "m1", 4),
        ("m3", "m2", 5),
    ]
    sizes = {m.id: m.size for m in outline}
    assert sizes["m0"] >= 10 and sizes["m3"] >= 40 and sizes["m1"] > 20  # text and data


async def test_a_page_is_the_newest_of_the_shown_branch_and_pages_back(branched):
    outline = await branched.outline("conv-pages")
    leaf = (await branched.get_conversation("conv-pages")).leaf_id
    newest = page_of(outline, leaf, before=None, limit=2, max_chars=10_000)
    assert newest.ids == ["m2", "m3"] and newest.has_more
    older = page_of(outline, leaf, before="m2", limit=2, max_chars=10_000)
    assert older.ids == ["m0", "m1"] and not older.has_more
    by_size = page_of(outline, leaf, before=None, limit=100, max_chars=50)
    assert by_size.ids == ["m3"] and by_size.has_more  # one message at least, then within the size
    with pytest.raises(NotFound):
        page_of(outline, leaf, before="m2b", limit=2, max_chars=10_000)  # not on the shown branch
    messages = await branched.messages_by_id("conv-pages", newest.ids)
    assert [(m.id, m.content) for m in messages] == [("m2", "b" * 30), ("m3", "c" * 40)]
    assert await branched.messages_by_id("other-conversation", newest.ids) == []
