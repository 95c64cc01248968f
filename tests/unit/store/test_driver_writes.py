"""What a turn writes (`append`) and loading a conversation run, on a SQLite file, on the sqlite3
connection itself (store/prepared.py); on Postgres through SQLAlchemy. Either way SQLAlchemy's
reads see what was written, the stored text is what SQLAlchemy itself stores, and refusals and
failures are the same errors, leaving the writer ready for the next write."""

from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, text

from switchboard.errors import BadRequest, Conflict, NotFound, StoreError, StoreUnavailable
from switchboard.store import NewConversation, NewMessage, open_store
from switchboard.store.engine import WRITE, make_engine
from switchboard.store.models import conversations, messages

DATA = {
    "tool_calls": [{"id": "c1", "name": "srv_echo", "arguments": {"text": "héllo ✓", "n": 1.5, "none": None}}],
    "finish_reason": "stop",
    "empty": {},
    "list": [1, "two", None, True],
}


async def test_what_append_writes_reads_back_as_written(store):
    made = NewConversation(
        owner="ann@example.com", title="Trip plans", model="m1", compliance_level="b", levels_used=["a", None, "b"]
    )
    first = await store.append(
        "c1", [NewMessage("u1", None, "user", "Plan a trip to Zanzibar", {"context": None})], create=made, files=["f1"]
    )
    later = await store.append(
        "c1",
        [
            NewMessage("a1", "u1", "assistant", "", DATA),
            NewMessage("t1", "a1", "tool", "résumé ✓", {"ok": True, "artifacts": []}),
        ],
        allowances=["srv:echo"],
        model=None,
        levels=("c", ["a", None, "b", "c"]),
    )
    written = first + later
    assert [m.seq for m in written] == [1, 2, 3]
    assert all(m.created_at.tzinfo is UTC for m in written)

    loaded = await store.load("c1")  # by the driver (sqlite3 or asyncpg); the reads below by SQLAlchemy
    assert loaded.messages == written == await store.messages("c1")
    assert loaded.conversation == await store.get_conversation("c1")
    assert await store.messages_by_id("c1", ["t1", "a1"]) == written[1:]
    assert [(o.id, o.parent_id, o.seq) for o in await store.outline("c1")] == [
        ("u1", None, 1),
        ("a1", "u1", 2),
        ("t1", "a1", 3),
    ]
    assert loaded.messages[1].data == DATA
    conversation = loaded.conversation
    assert (conversation.title, conversation.model, conversation.compliance_level, conversation.levels_used) == (
        "Trip plans",
        None,
        "c",
        ("a", None, "b", "c"),
    )
    assert (conversation.leaf_id, conversation.message_count) == ("t1", 3)
    assert conversation.created_at == first[0].created_at and conversation.updated_at == later[-1].created_at
    assert (loaded.files, loaded.allowances) == (["f1"], {"srv:echo"})
    # the search indexes were kept in step
    assert [c.id for c in await store.list_conversations("ann@example.com", q="résumé")] == ["c1"]
    assert [c.id for c in await store.list_conversations("ann@example.com", q="Trip plans")] == ["c1"]


async def test_a_sqlite_file_stores_the_text_sqlalchemy_stores(tmp_path):
    """The same values written by `append` and by SQLAlchemy Core are the same text in the file
    (the JSON's form, the datetimes' fixed-width naive UTC)."""
    store_url = f"sqlite+aiosqlite:///{tmp_path}/switchboard.db"
    store = await open_store(store_url)
    made = NewConversation(
        owner="ann@example.com", title="t", model=None, compliance_level="b", levels_used=["a", None]
    )
    [message] = await store.append("c1", [NewMessage("u1", None, "user", "q", DATA)], create=made)
    at = message.created_at
    engine = make_engine(store_url)
    try:
        async with engine.execution_options(**WRITE).begin() as conn:
            await conn.execute(
                insert(conversations).values(
                    id="c2",
                    owner="ann@example.com",
                    title="t",
                    model=None,
                    compliance_level="b",
                    levels_used=["a", None],
                    leaf_id="u2",
                    message_count=1,
                    created_at=at,
                    updated_at=at,
                )
            )
            await conn.execute(
                insert(messages).values(
                    id="u2",
                    conversation_id="c2",
                    parent_id=None,
                    seq=1,
                    role="user",
                    content="q",
                    data=DATA,
                    created_at=at,
                )
            )
        async with engine.connect() as conn:
            columns = "levels_used, created_at, updated_at, typeof(created_at), leaf_id, message_count"
            rows = (await conn.execute(text(f"SELECT {columns} FROM conversations ORDER BY id"))).all()
            assert rows[0][1:4] == rows[1][1:4] and rows[0][0] == rows[1][0] == '["a", null]'
            assert (rows[0][4], rows[0][5]) == ("u1", 1)
            rows = (
                await conn.execute(text("SELECT data, created_at, typeof(data), typeof(seq) FROM messages ORDER BY id"))
            ).all()
            assert rows[0] == rows[1]
    finally:
        await engine.dispose()
        await store.close()
    assert len(rows[0][1]) == len("2026-01-01 00:00:00.000000") and datetime.fromisoformat(rows[0][1]) == at.replace(
        tzinfo=None
    )


@pytest.mark.parametrize("refusal", ["taken message id", "missing parent", "no conversation", "taken conversation id"])
async def test_refusals_are_the_same_errors_and_the_next_write_goes_through(store, refusal):
    made = NewConversation(owner="ann@example.com", title="t", model=None, compliance_level=None)
    await store.append("c1", [NewMessage("u1", None, "user", "q")], create=made)
    conversation, batch, create, error, says = {
        "taken message id": (
            "c1",
            [NewMessage("a1", "u1", "assistant", "a"), NewMessage("u1", "a1", "tool", "r")],
            None,
            Conflict,
            "a message with id 'u1' exists already",
        ),
        "missing parent": (
            "c1",
            [NewMessage("a1", "u1", "assistant", "a"), NewMessage("t1", "gone", "tool", "r")],
            None,
            BadRequest,
            "message 'gone' is not in conversation 'c1'",
        ),
        "no conversation": (
            "c9",
            [NewMessage("a1", None, "user", "a")],
            None,
            NotFound,
            "conversation 'c9' does not exist",
        ),
        "taken conversation id": (
            "c1",
            [NewMessage("a1", None, "user", "a")],
            made,
            Conflict,
            "a conversation with id 'c1' exists already; pick another id",
        ),
    }[refusal]
    with pytest.raises(error) as caught:
        await store.append(conversation, batch, create=create, files=["f1"], allowances=["k"], model="m9")
    assert caught.value.message == says
    loaded = await store.load("c1")  # nothing of the refused call was stored
    assert ([m.id for m in loaded.messages], loaded.files, loaded.allowances) == (["u1"], [], set())
    assert (loaded.conversation.leaf_id, loaded.conversation.message_count, loaded.conversation.model) == (
        "u1",
        1,
        None,
    )
    await store.append("c1", [NewMessage("a1", "u1", "assistant", "a")])  # the writer is ready again
    assert [m.seq for m in await store.messages("c1")] == [1, 2]


async def test_a_failed_statement_is_a_store_error_and_the_next_write_goes_through(store, store_url):
    made = NewConversation(owner="ann@example.com", title="t", model=None, compliance_level=None)
    await store.append("c1", [NewMessage("u1", None, "user", "q")], create=made)
    refuse, allow = (
        (
            "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'driver text'); END",
            "DROP TRIGGER refuse",
        )
        if store_url.startswith("sqlite")
        else (
            "ALTER TABLE messages ADD CONSTRAINT driver_text CHECK (length(content) < 0) NOT VALID",
            "ALTER TABLE messages DROP CONSTRAINT driver_text",
        )
    )
    engine = make_engine(store_url)
    try:
        async with engine.execution_options(**WRITE).begin() as conn:
            await conn.execute(text(refuse))
        with pytest.raises(StoreError) as caught:
            await store.append("c1", [NewMessage("a1", "u1", "assistant", "a")], allowances=["k"])
        assert not isinstance(caught.value, StoreUnavailable)
        cause = "IntegrityError" if store_url.startswith("sqlite") else "CheckViolationError"  # the driver's own class
        assert (
            caught.value.message
            == f"Could not save the message: the conversation store failed ({cause}); nothing of it was saved."
        )
        async with engine.execution_options(**WRITE).begin() as conn:
            await conn.execute(text(allow))
    finally:
        await engine.dispose()
    assert (await store.load("c1")).allowances == set()
    await store.append("c1", [NewMessage("a1", "u1", "assistant", "a")])
    assert [m.id for m in await store.messages("c1")] == ["u1", "a1"]


async def test_a_sqlite_connection_found_closed_is_store_unavailable_and_then_replaced(tmp_path):
    """As with SQLAlchemy's own handling: the write that finds its connection gone says the store
    is unavailable (nothing saved), and the next one runs on a new connection."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/switchboard.db")
    try:
        made = NewConversation(owner="ann@example.com", title="t", model=None, compliance_level=None)
        await store.append("c1", [NewMessage("u1", None, "user", "q")], create=made)
        threads = store._threads  # break the writer thread's own connection, on that thread
        await threads.write_thread.call(
            lambda _: threads._connection(threads.writer).connection.driver_connection.close(), None
        )
        with pytest.raises(StoreUnavailable):
            await store.append("c1", [NewMessage("a1", "u1", "assistant", "a")])
        await store.append("c1", [NewMessage("a1", "u1", "assistant", "a")])
        assert [m.id for m in await store.messages("c1")] == ["u1", "a1"]
    finally:
        await store.close()


def test_the_compiled_statements_are_kept_for_their_objects_and_their_number_is_bounded():
    """A statement is compiled once per object; one built per call (a mistake) costs a compile
    per call but cannot make the cache grow without end."""
    from sqlalchemy import bindparam, select
    from sqlalchemy.dialects import sqlite

    from switchboard.store.models import conversations
    from switchboard.store.prepared import MOST_PREPARED, prepared_for

    cache: dict = {}
    dialect = sqlite.dialect()
    stmt = select(conversations.c.id).where(conversations.c.id == bindparam("cid"))
    first = prepared_for(cache, stmt, dialect, ("cid",))
    assert prepared_for(cache, stmt, dialect, ("cid",)) is first and len(cache) == 1
    for n in range(MOST_PREPARED + 50):
        prepared_for(cache, select(conversations.c.id).where(conversations.c.title == f"t{n}"), dialect, ())
    assert len(cache) == MOST_PREPARED and (stmt, ("cid",)) not in cache  # the oldest went first
