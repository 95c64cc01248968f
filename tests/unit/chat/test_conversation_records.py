"""`Conversations.record` on a real store (SQLite and Postgres): what a message brings with it is
stored with it, and a turn stopped while a write runs leaves memory matching the store."""

import asyncio

import pytest
from switchboard.artifacts import ArtifactStore
from switchboard.auth import User
from switchboard.chat.conversations import Conversations
from switchboard.chat.session import ChatSession
from switchboard.history import AssistantText, UserText
from switchboard.store import open_store

ANN = User(email="ann@example.com", groups=frozenset({"users"}))


@pytest.fixture(params=["sqlite", "postgres"])
async def conversations(request, tmp_path):
    url = f"sqlite+aiosqlite:///{tmp_path}/db.sqlite" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    store = await open_store(url)
    try:
        yield Conversations(store, ArtifactStore(tmp_path / "files"))
    finally:
        await store.close()


async def started(conversations):
    session = ChatSession(user=ANN, conversation_id="conv-0001", model="m1")
    assert await conversations.begin(session, "first question")
    return session


async def test_allowances_and_a_new_model_are_stored_with_the_message(conversations):
    session = await started(conversations)
    await conversations.record(session, UserText(id="u1", text="q"), {"files": [{"id": "f1"}, {"id": "f2"}]})
    session.allow("git:log")
    session.model = "m2"
    await conversations.record(session, AssistantText(id="a1", text="done", finish_reason="stop"), {})
    assert session.new_allowances == [] and session.saved_model == "m2"
    loaded = await conversations.store.load("conv-0001")
    assert loaded.files == ["f1", "f2"] and loaded.allowances == {"git:log"}
    assert (loaded.conversation.model, loaded.conversation.leaf_id) == ("m2", "a1")


async def test_a_turn_stopped_during_a_write_keeps_memory_and_store_alike(conversations):
    session = await started(conversations)
    for n in range(20):
        task = asyncio.create_task(conversations.record(session, UserText(id=f"u{n}", text="q"), {}))
        await asyncio.sleep(0)  # the write is under way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        stored = await conversations.store.load("conv-0001")
        assert [r.id for r in session.history] == [m.id for m in stored.messages]
        assert session.leaf_id == stored.conversation.leaf_id
