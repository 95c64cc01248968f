"""A process's prepared context of a stored conversation (chat/prepared_contexts.py) against the
real store, on both backends: what it holds is brought up to date from the messages written since,
and read whole again when a message changed in place or the conversation was made again."""

from __future__ import annotations

from switchboard.chat.prepared_contexts import PreparedContexts
from switchboard.history import ToolReply, UserText


async def _load(store, contexts, cid):
    held = contexts.after(cid)
    loaded = await store.load(cid, after=held)
    prepared = contexts.prepare(loaded, held.get(cid, 0))
    if prepared is None:
        prepared = contexts.prepare(await store.load(cid), 0)
    return loaded, prepared


def _texts(prepared):
    return [getattr(r, "text", "") for r in prepared.history]


async def _start(store, cid):
    await store.create_conversation(id=cid, owner="a@example.com", title="t", model=None, compliance_level=None)
    await store.add_message(cid, id=f"{cid}-u1", parent_id=None, role="user", content="one", data={})
    await store.add_message(
        cid,
        id=f"{cid}-t1",
        parent_id=f"{cid}-u1",
        role="tool",
        content="shown",
        data={"call_id": "c1", "tool": "counter_show", "server": "counter", "ok": True, "app": {}},
    )


async def test_only_new_messages_are_read_and_the_branch_grows_by_them(store):
    contexts = PreparedContexts()
    await _start(store, "conv-grow-1")
    loaded, prepared = await _load(store, contexts, "conv-grow-1")
    assert len(loaded.messages) == 2 and _texts(prepared) == ["one", "shown"]
    await store.add_message("conv-grow-1", id="conv-grow-1-u2", parent_id="conv-grow-1-t1", role="user", content="two")
    loaded, prepared = await _load(store, contexts, "conv-grow-1")
    assert [m.content for m in loaded.messages] == ["two"]  # only what was written since
    assert _texts(prepared) == ["one", "shown", "two"]
    assert isinstance(prepared.history[0], UserText) and isinstance(prepared.history[1], ToolReply)


async def test_an_apps_data_changed_in_place_is_read_again(store):
    contexts = PreparedContexts()
    await _start(store, "conv-app-1")
    _, prepared = await _load(store, contexts, "conv-app-1")
    assert prepared.app_context == []

    def put(data):
        return {**data, "app": {"model_context": "the counter is at 7"}}

    await store.change_message_data("conv-app-1", "conv-app-1-t1", put)
    _, prepared = await _load(store, contexts, "conv-app-1")
    assert prepared.app_context == [("counter_show", "the counter is at 7")]


async def test_a_conversation_made_again_under_its_id_is_read_whole(store):
    contexts = PreparedContexts()
    await _start(store, "conv-again-1")
    await _load(store, contexts, "conv-again-1")
    await store.delete_conversation("conv-again-1")
    await store.create_conversation(
        id="conv-again-1", owner="a@example.com", title="t", model=None, compliance_level=None
    )
    await store.add_message("conv-again-1", id="x-u1", parent_id=None, role="user", content="fresh", data={})
    _, prepared = await _load(store, contexts, "conv-again-1")
    assert _texts(prepared) == ["fresh"]
