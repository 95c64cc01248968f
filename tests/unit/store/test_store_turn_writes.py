"""What a turn writes and reads, each in one call: a message with the files it links, the
allowances granted and the model that changed (one transaction: all or nothing), a conversation
with every level it ran at, and a conversation loaded whole. SQLite and a real Postgres."""

import asyncio

import pytest
from sqlalchemy import text

from switchboard.errors import BadRequest, Conflict, NotFound
from switchboard.store import open_store
from switchboard.store.engine import make_engine


async def new(store, id="conv-1"):
    return await store.create_conversation(id=id, owner="ann@example.com", title="t", model="m1", compliance_level="a")


async def test_a_message_is_stored_with_its_files_allowances_and_model(store):
    await new(store)
    await store.add_message(
        "conv-1", id="u1", parent_id=None, role="user", content="q", data={"files": [{"id": "f1"}]}, files=["f1", "f2"]
    )
    await store.add_message(
        "conv-1",
        id="a1",
        parent_id="u1",
        role="assistant",
        content="a",
        allowances=["git:log", "files:read"],
        model="m2",
    )
    loaded = await store.load("conv-1")
    assert [m.id for m in loaded.messages] == ["u1", "a1"] and [m.seq for m in loaded.messages] == [1, 2]
    assert loaded.messages[0].data == {"files": [{"id": "f1"}]}
    assert loaded.files == ["f1", "f2"]
    assert loaded.allowances == {"git:log", "files:read"}
    assert (loaded.conversation.model, loaded.conversation.leaf_id, loaded.conversation.message_count) == (
        "m2",
        "a1",
        2,
    )


@pytest.mark.parametrize("refusal", ["taken id", "parent elsewhere", "no conversation"])
async def test_a_refused_message_stores_none_of_what_came_with_it(store, refusal):
    await new(store)
    await new(store, id="conv-2")
    await store.add_message("conv-1", id="u1", parent_id=None, role="user", content="q")
    conversation, message_id, parent, error = {
        "taken id": ("conv-2", "u1", None, Conflict),
        "parent elsewhere": ("conv-2", "x1", "u1", BadRequest),
        "no conversation": ("missing", "x1", None, NotFound),
    }[refusal]
    with pytest.raises(error):
        await store.add_message(
            conversation,
            id=message_id,
            parent_id=parent,
            role="user",
            content="q",
            files=["f9"],
            allowances=["k"],
            model="m9",
        )
    loaded = await store.load("conv-2")
    assert (loaded.messages, loaded.files, loaded.allowances) == ([], [], set())
    assert (loaded.conversation.model, loaded.conversation.message_count, loaded.conversation.leaf_id) == (
        "m1",
        0,
        None,
    )


async def test_a_conversation_is_created_with_every_level_it_ran_at(store):
    made = await store.create_conversation(
        id="conv-1", owner="ann@example.com", title="t", model=None, compliance_level="b", levels_used=["a", None, "b"]
    )
    assert made.levels_used == ("a", None, "b")
    assert (await store.get_conversation("conv-1")).levels_used == ("a", None, "b")
    await new(store, id="conv-2")
    assert (await store.get_conversation("conv-2")).levels_used == ("a",)  # by default its one level


async def test_load_of_two_ids_takes_the_first_stored(store):
    # a conversation a client picked may be stored as given or under the owner's scoped id
    assert await store.load("conv-a", "conv-b") is None
    await new(store, id="conv-b")
    await store.add_message("conv-b", id="b1", parent_id=None, role="user", content="under b")
    loaded = await store.load("conv-a", "conv-b")
    assert loaded.conversation.id == "conv-b" and [m.id for m in loaded.messages] == ["b1"]
    await new(store, id="conv-a")
    loaded = await store.load("conv-a", "conv-b")
    assert loaded.conversation.id == "conv-a" and loaded.messages == []
    assert (await store.load("conv-b", "conv-a")).conversation.id == "conv-b"
    assert (await store.load("conv-x", "conv-y", "conv-a")).conversation.id == "conv-a"  # more than two: in turn


async def test_load_is_none_for_an_unknown_conversation_and_whole_otherwise(store):
    assert await store.load("nothing-here") is None
    await new(store)
    await store.add_message("conv-1", id="u1", parent_id=None, role="user", content="q")
    await store.add_message("conv-1", id="u2", parent_id=None, role="user", content="edited q")  # a second branch
    loaded = await store.load("conv-1")
    assert loaded.conversation == await store.get_conversation("conv-1")
    assert loaded.messages == await store.messages("conv-1")
    assert [m.id for m in loaded.messages] == ["u1", "u2"]


async def test_a_connection_the_server_closed_is_replaced_before_use(postgres_url):
    """The server restarted (here: it ended every connection of the store): the next write gets a
    new connection instead of failing."""
    store = await open_store(postgres_url)
    admin = make_engine(postgres_url)
    try:
        await new(store)
        await asyncio.gather(*(store.get_conversation("conv-1") for _ in range(3)))  # several pooled connections
        async with admin.connect() as conn:
            ended = await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            assert len(ended.all()) >= 1
        await asyncio.sleep(0.2)  # the closed sockets reach the event loop
        for n in range(3):
            await store.add_message("conv-1", id=f"u{n}", parent_id=None, role="user", content="after the restart")
        assert (await store.get_conversation("conv-1")).message_count == 3
    finally:
        await admin.dispose()
        await store.close()


async def test_append_stores_a_new_conversation_with_its_messages_in_one_transaction(store):
    from switchboard.store import NewConversation, NewMessage

    made = NewConversation(owner="ann@example.com", title="t", model="m1", compliance_level="a")
    stored = await store.append("conv-new", [NewMessage("u1", None, "user", "q")], create=made)
    assert [m.seq for m in stored] == [1]
    loaded = await store.load("conv-new")
    assert (loaded.conversation.leaf_id, loaded.conversation.message_count, loaded.conversation.levels_used) == (
        "u1",
        1,
        ("a",),
    )
    await store.append(
        "conv-new",
        [
            NewMessage("a1", "u1", "assistant", "", {"tool_calls": []}),
            NewMessage("t1", "a1", "tool", "r"),
            NewMessage("a2", "t1", "assistant", "done"),
        ],
        allowances=["k"],
        model="m2",
    )
    loaded = await store.load("conv-new")
    assert [(m.id, m.seq, m.parent_id) for m in loaded.messages] == [
        ("u1", 1, None),
        ("a1", 2, "u1"),
        ("t1", 3, "a1"),
        ("a2", 4, "t1"),
    ]
    assert (loaded.conversation.leaf_id, loaded.conversation.message_count, loaded.conversation.model) == (
        "a2",
        4,
        "m2",
    )
    assert loaded.allowances == {"k"}


@pytest.mark.parametrize("refusal", ["taken conversation id", "taken message id", "parent elsewhere"])
async def test_a_refused_append_stores_nothing_of_it(store, refusal):
    from switchboard.store import NewConversation, NewMessage

    await new(store)
    await store.add_message("conv-1", id="u1", parent_id=None, role="user", content="q")
    made = NewConversation(owner="ann@example.com", title="t", model=None, compliance_level=None)
    conversation, create, batch, error = {
        "taken conversation id": ("conv-1", made, [NewMessage("x1", None, "user", "q")], Conflict),
        "taken message id": ("conv-2", made, [NewMessage("u1", None, "user", "q")], Conflict),
        "parent elsewhere": (
            "conv-1",
            None,
            [NewMessage("x1", "u1", "assistant", "a"), NewMessage("x2", "nowhere", "tool", "r")],
            BadRequest,
        ),
    }[refusal]
    with pytest.raises(error):
        await store.append(conversation, batch, create=create, allowances=["k"])
    assert await store.get_conversation("conv-2") is None
    loaded = await store.load("conv-1")
    assert [m.id for m in loaded.messages] == ["u1"] and loaded.allowances == set()
    assert (loaded.conversation.leaf_id, loaded.conversation.message_count) == ("u1", 1)
