"""The store's side of MCP Apps, on both backends: a user's tool message by its call id
(nobody else's), and changing what is kept with it."""

from __future__ import annotations

import pytest

from switchboard.errors import NotFound


async def _conversation(store, cid: str, owner: str) -> None:
    await store.create_conversation(id=cid, owner=owner, title="t", model=None, compliance_level=None)
    await store.add_message(cid, id=f"{cid}-u", parent_id=None, role="user", content="show", data={})
    await store.add_message(
        cid,
        id=f"{cid}-t",
        parent_id=f"{cid}-u",
        role="tool",
        content="counter at 1",
        data={
            "call_id": f"call_{cid}",
            "tool": "counter_show",
            "server": "counter",
            "ok": True,
            "app": {"resource_uri": "ui://counter/app.html"},
        },
    )


async def test_a_tool_call_is_found_for_its_owner_only(store):
    await _conversation(store, "conv-alice-1", "alice@example.com")
    await _conversation(store, "conv-bob-1", "bob@example.com")

    conversation, message = await store.find_tool_call("alice@example.com", "call_conv-alice-1")
    assert conversation.id == "conv-alice-1" and message.id == "conv-alice-1-t"
    assert message.data["app"]["resource_uri"] == "ui://counter/app.html"
    assert await store.find_tool_call("alice@example.com", "call_conv-bob-1") is None
    assert await store.find_tool_call("bob@example.com", "call_conv-alice-1") is None
    assert await store.find_tool_call("alice@example.com", "call_nothing") is None


async def test_changing_what_is_kept_with_a_message(store):
    await _conversation(store, "conv-alice-2", "alice@example.com")

    def add(data):
        return {**data, "app": {**data["app"], "model_context": "zoomed"}}

    changed = await store.change_message_data("conv-alice-2", "conv-alice-2-t", add)
    assert changed["app"]["model_context"] == "zoomed"
    _, message = await store.find_tool_call("alice@example.com", "call_conv-alice-2")
    assert message.data["app"] == {"resource_uri": "ui://counter/app.html", "model_context": "zoomed"}
    assert (await store.get_conversation("conv-alice-2")).leaf_id == "conv-alice-2-t"  # the branch did not move
    with pytest.raises(NotFound):
        await store.change_message_data("conv-alice-1", "conv-alice-2-t", add)  # not that conversation's
