"""Migration 0007: rows and files stored under a mixed-case address belong to the normalized one."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from sqlalchemy import select

from switchboard.chat.conversation_ids import legacy_scoped_id
from switchboard.chat.conversations import Conversations
from switchboard.chat.events import ChatMessage
from switchboard.config.models import ComplianceLevels
from switchboard.errors import NotFound
from switchboard.files.artifacts import ArtifactStore
from switchboard.identity.users import User
from switchboard.store import models as m
from switchboard.store import open_store
from switchboard.store.engine import make_engine
from switchboard.store.migrate import _config, migrate

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _rows_before_0007(conn) -> None:
    command.upgrade(_config(conn), "0006")
    named = legacy_scoped_id("Alice@Example.com", "my-notes")  # a conversation the client named "my-notes"
    for cid, owner in (("c-alice", "Alice@Example.com "), ("c-plain", "bob@example.com"), (named, "Alice@Example.com")):
        conn.execute(
            m.conversations.insert().values(
                id=cid, owner=owner, title=cid, levels_used=[], message_count=0, created_at=T0, updated_at=T0
            )
        )
    conn.execute(
        m.api_tokens.insert().values(
            id="t1", owner="ALICE@example.com", name="cli", secret_hash="0" * 64, created_at=T0
        )
    )
    # two spellings hold a credential for the same server and kind: the newer one wins
    for user, value, age in (
        ("Alice@Example.com", "older", 2),
        ("alice@example.com", "newer", 1),
        ("ALICE@EXAMPLE.COM", "oldest", 3),
    ):
        conn.execute(
            m.user_credentials.insert().values(
                server="git", user=user, kind="oauth", value=value, updated_at=T0 - timedelta(hours=age)
            )
        )
    conn.execute(
        m.user_credentials.insert().values(
            server="wiki", user="Alice@Example.com", kind="token", value="only", updated_at=T0
        )
    )
    for state, user, age in (("s-old", "alice@example.com", 2), ("s-new", "Alice@Example.com", 1)):
        conn.execute(
            m.oauth_pending.insert().values(
                state_hash=state, server="git", user=user, value="v", created_at=T0 - timedelta(hours=age)
            )
        )
    conn.execute(
        m.tasks.insert().values(
            id="k1",
            task_id="x",
            owner="Alice@Example.com",
            conversation_id="c-alice",
            server="git",
            tool="git_log",
            call_id="c1",
            status="working",
            created_at=T0,
            updated_at=T0,
        )
    )


async def test_the_migration_lower_cases_every_owner_and_keeps_the_newest_of_colliding_rows(store_url, tmp_path):
    engine = make_engine(store_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_rows_before_0007)
        await migrate(engine)
        async with engine.connect() as conn:
            owners = dict((await conn.execute(select(m.conversations.c.id, m.conversations.c.owner))).all())
            tokens = (await conn.execute(select(m.api_tokens.c.owner))).scalars().all()
            creds = sorted(
                (
                    await conn.execute(
                        select(m.user_credentials.c.server, m.user_credentials.c.user, m.user_credentials.c.value)
                    )
                ).all()
            )
            pending = (await conn.execute(select(m.oauth_pending.c.state_hash, m.oauth_pending.c.user))).all()
            task_owners = (await conn.execute(select(m.tasks.c.owner))).scalars().all()
    finally:
        await engine.dispose()
    named = legacy_scoped_id("Alice@Example.com", "my-notes")
    assert owners == {"c-alice": "alice@example.com", "c-plain": "bob@example.com", named: "alice@example.com"}
    assert tokens == ["alice@example.com"]
    assert creds == [("git", "alice@example.com", "newer"), ("wiki", "alice@example.com", "only")]
    assert [tuple(p) for p in pending] == [("s-new", "alice@example.com")]
    assert task_owners == ["alice@example.com"]

    store = await open_store(store_url)  # the store's own reads find them under the new spelling
    try:
        assert sorted(c.id for c in await store.list_conversations("alice@example.com")) == sorted(["c-alice", named])
        # the name the client picked still reaches its conversation, by the routes and by a chat
        conversations = Conversations(store, ArtifactStore(tmp_path / "files"))
        alice = User(email="alice@example.com", groups=frozenset())
        assert (await conversations.find(alice, "my-notes")).id == named
        chat = ChatMessage(type="chat", content="more", conversation_id="my-notes")
        turn = await conversations.turn_for(alice, chat, "connection-own-id", ComplianceLevels())
        assert turn.conversation.id == named and turn.conversation.stored and turn.moved is None
        with pytest.raises(NotFound):  # and only for its owner
            await conversations.find(User(email="bob@example.com", groups=frozenset()), "my-notes")
    finally:
        await store.close()


def test_files_stored_under_a_mixed_case_owner_belong_to_the_normalized_address(tmp_path):
    files = ArtifactStore(tmp_path / "files")
    stored = files.put_upload(
        owner="alice@example.com", name="a.txt", mime="text/plain", data=b"x", max_bytes=1024, max_files=10
    )
    meta = tmp_path / "files" / f"{stored.id}.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "owner": "Alice@Example.com "}))  # an old file

    again = ArtifactStore(tmp_path / "files")  # counts uploads afresh from the metadata
    assert again.get(stored.id, owner="alice@example.com")[0].owner == "alice@example.com"
    assert again.usage("alice@example.com").files == 1
    try:
        again.get(stored.id, owner="bob@example.com")
    except NotFound:
        pass
    else:
        raise AssertionError("another user read the file")
    assert again.delete(stored.id, owner="alice@example.com")
    assert again.usage("alice@example.com").files == 0


def _counting_reads(store) -> list[str]:
    reads: list[str] = []
    read = store.read

    async def counting(doing, work):
        reads.append(doing)
        return await read(doing, work)

    store.read = counting
    return reads


async def test_earlier_spellings_are_read_once_and_an_empty_table_never_again(store_url):
    """The table changes only in migration 0007, so a new conversation's turn reads it at most once per user."""
    store = await open_store(store_url)
    try:
        reads = _counting_reads(store)
        assert [await store.old_spellings("alice@example.com") for _ in range(3)] == [[], [], []]
        assert await store.old_spellings("bob@example.com") == []
        assert len(reads) == 1  # the one look that found the table empty

        def add(conn):
            conn.execute(m.owner_spellings.insert().values(owner="alice@example.com", spelling="Alice@Example.com"))

        await store.transaction("add a spelling", add)  # as the migration does, before a process serves
    finally:
        await store.close()
    again = await open_store(store_url)
    try:
        reads = _counting_reads(again)
        assert [await again.old_spellings("alice@example.com") for _ in range(3)] == [["Alice@Example.com"]] * 3
        assert await again.old_spellings("bob@example.com") == []
        assert len(reads) == 3  # whether any exist, then once per user
    finally:
        await again.close()
