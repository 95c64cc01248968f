"""list_conversations(q=...): case-insensitive substrings of titles and of message text."""

import pytest

ANN, BOB = "ann@example.com", "bob@example.com"


@pytest.fixture
async def filled(store):
    async def conv(id, owner, title, *texts):
        await store.create_conversation(id=id, owner=owner, title=title, model=None, compliance_level=None)
        parent = None
        for i, text in enumerate(texts):
            parent = (await store.add_message(id, id=f"{id}-{i}", parent_id=parent, role="user", content=text)).id

    await conv("volcano", ANN, "Iceland trip", "How active is Eyjafjallajökull?", "And Hekla?")
    await conv("budget", ANN, "Quarterly budget", "Spreadsheet for Q3 costs")
    await conv("code", ANN, "Refactor", "rename parse_config_file() to load_config")
    await conv("secret", BOB, "Bob's Iceland notes", "Eyjafjallajökull again; the budget is secret")
    return store


async def ids(store, q, owner=ANN):
    return sorted(c.id for c in await store.list_conversations(owner, q=q))


async def test_finds_message_text_and_titles(filled):
    assert await ids(filled, "hekla") == ["volcano"]  # a message of the conversation, any case
    assert await ids(filled, "ICELAND") == ["volcano"]  # a title
    assert await ids(filled, "budget") == ["budget"]  # title; Bob's message says it too but is not Ann's


async def test_substrings_and_odd_characters(filled):
    assert await ids(filled, "jallaj") == ["volcano"]  # inside a word
    assert await ids(filled, "Eyjafjallajökull") == ["volcano"]  # non-ASCII
    assert await ids(filled, "parse_config") == ["code"]  # "_" is not a wildcard
    assert await ids(filled, "e_c") == ["code"]
    assert await ids(filled, "50%") == []
    assert await ids(filled, 'file()" OR "x') == []  # no query syntax gets through
    assert await ids(filled, "file()") == ["code"]


async def test_queries_under_three_characters_match_titles_and_message_text(filled):
    assert "code" in await ids(filled, "re")  # "Refactor"
    assert "budget" in await ids(filled, "q")  # "Quarterly budget"
    assert await ids(filled, "Q3") == ["budget"]  # only in a message
    assert await ids(filled, "ö") == ["volcano"]  # "Eyjafjallajökull", in a message
    assert await ids(filled, "Q3 ") == ["budget"]  # the query is stripped first
    assert await ids(filled, "zx") == []


async def test_a_nul_character_matches_nothing_and_fails_nothing(filled):
    for q in ("a\x00b", "\x00", "Iceland\x00", "\x00Hekla trip"):
        assert await ids(filled, q) == [], repr(q)


async def test_never_another_owners_conversation(filled):
    assert await ids(filled, "secret") == []
    assert await ids(filled, "secret", owner=BOB) == ["secret"]
    assert await ids(filled, "Iceland", owner=BOB) == ["secret"]


async def test_search_follows_edits_and_deletes(filled):
    await filled.update_conversation("budget", title="Annual plan")
    assert await ids(filled, "quarterly") == []
    assert await ids(filled, "annual") == ["budget"]
    await filled.delete_conversation("volcano")
    assert await ids(filled, "hekla") == []
    assert await ids(filled, "eyjafjalla") == []
    assert await ids(filled, "eyjafjalla", owner=BOB) == ["secret"]


async def test_blank_query_lists_everything(filled):
    assert await ids(filled, "  ") == ["budget", "code", "volcano"]


async def test_plans_for_few_and_many_matches_agree(store_url):
    """Each backend picks one of two plans by how many messages match; both must find the same."""
    from sqlalchemy import select

    from switchboard.store import open_store
    from switchboard.store.engine import make_engine
    from switchboard.store.models import conversations
    from switchboard.store.search import COMMON_MATCHES, common_in_messages, matches

    store = await open_store(store_url)
    for n in range(30):
        await store.create_conversation(
            id=f"c{n:02d}", owner=ANN if n % 3 else BOB, title=f"title {n}", model=None, compliance_level=None
        )
        await store.add_message(
            f"c{n:02d}", id=f"m{n}", parent_id=None, role="user", content="weekly meeting" if n % 2 else "lunch"
        )
    await store.list_conversations(ANN, q="meeting")  # a search first brings SQLite's index up to date
    await store.close()
    engine = make_engine(store_url)
    dialect = engine.dialect.name
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(common_in_messages("meeting", dialect))).scalar_one() == 15 < COMMON_MATCHES
            for q in ("meeting", "lunch", "title 1", "nothing"):
                found = []
                for common in (False, True):
                    stmt = (
                        select(conversations.c.id)
                        .where(conversations.c.owner == ANN, matches(q, dialect, owner=ANN, common=common))
                        .order_by(conversations.c.updated_at.desc())
                        .limit(5)
                    )
                    found.append((await conn.execute(stmt)).scalars().all())
                assert found[0] == found[1], q
                assert (found[0] == []) == (q == "nothing"), q
    finally:
        await engine.dispose()


async def test_a_short_query_reads_the_messages_of_the_newest_conversations_only(store, monkeypatch):
    from switchboard.store import search

    monkeypatch.setattr(search, "SHORT_QUERY_CONVERSATIONS", 2)
    for i, text in enumerate(["old Q3 plan", "newer", "newest"]):
        await store.create_conversation(id=f"c{i}", owner=ANN, title=f"chat {i}", model=None, compliance_level=None)
        await store.add_message(f"c{i}", id=f"m{i}", parent_id=None, role="user", content=text)
    assert await ids(store, "Q3") == [], "c0 is not among the 2 newest"
    await store.add_message("c0", id="m3", parent_id="m0", role="user", content="again")  # c0 is the newest now
    assert await ids(store, "Q3") == ["c0"]
    assert await ids(store, "chat 0") == ["c0"]  # titles: every conversation


# -- SQLite's index takes new rows in batches (migration 0009) ------------------------------------


async def _index_state(url):
    """(the marks in fts_indexed, whether FTS5's integrity check passes, what the index holds)."""
    from sqlalchemy import text
    from sqlalchemy.exc import DatabaseError

    from switchboard.store.engine import make_engine

    engine = make_engine(url)
    try:
        async with engine.begin() as conn:
            marks = dict((await conn.execute(text("SELECT source, up_to FROM fts_indexed"))).all())
            held = (await conn.execute(text("SELECT count(*) FROM messages_fts_docsize"))).scalar_one()
            try:
                await conn.execute(text("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')"))
                await conn.execute(text("INSERT INTO conversations_fts(conversations_fts) VALUES ('integrity-check')"))
                whole = True
            except DatabaseError:
                whole = False
    finally:
        await engine.dispose()
    return marks, whole, held


def _like(store_rows, q):
    return sorted({cid for cid, text in store_rows if q.lower() in text.lower()})


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db"


async def test_sqlite_search_finds_rows_the_index_has_not_taken_yet_and_stays_whole(sqlite_url):
    """A turn's write leaves its rows to the next catch-up; a search catches up first. Edits and
    deletes of rows waiting or held, and a rowid SQLite hands out again, keep the index whole."""
    from switchboard.store import open_store

    store = await open_store(sqlite_url)
    try:
        await store.create_conversation(id="a", owner=ANN, title="Harbour walk", model=None, compliance_level=None)
        await store.add_message("a", id="a1", parent_id=None, role="user", content="tide tables for Tuesday")
        await store.create_conversation(id="b", owner=ANN, title="Gone soon", model=None, compliance_level=None)
        await store.add_message("b", id="b1", parent_id=None, role="user", content="ephemeral words")
        marks, whole, held = await _index_state(sqlite_url)
        assert marks == {"messages": 0, "conversations": 0} and held == 0  # nothing indexed by the writes
        # rows still waiting: edited and deleted before any search
        await store.update_conversation("a", title="Harbour stroll")
        await store.delete_conversation("b")
        assert await ids(store, "stroll") == ["a"] and await ids(store, "walk") == []
        assert await ids(store, "ephemeral") == [] and await ids(store, "tide tab") == ["a"]
        marks, whole, held = await _index_state(sqlite_url)
        assert whole and held == 1 and marks["messages"] >= 1
        # rows the index holds: edited, deleted, and a rowid given out again after the highest row went
        await store.update_conversation("a", title="Lighthouse")
        await store.create_conversation(id="c", owner=ANN, title="Third", model=None, compliance_level=None)
        await store.add_message("c", id="c1", parent_id=None, role="user", content="foghorn schedule")
        assert await ids(store, "foghorn") == ["c"]
        await store.delete_conversation("c")  # the highest rowids: SQLite gives them out again
        await store.create_conversation(id="d", owner=ANN, title="Fourth", model=None, compliance_level=None)
        await store.add_message("d", id="d1", parent_id=None, role="user", content="buoy colours")
        marks, whole, held = await _index_state(sqlite_url)
        assert whole  # the reused rowids were indexed as they were written, the old text removed
        assert await ids(store, "lighthouse") == ["a"] and await ids(store, "harbour") == []
        assert (
            await ids(store, "foghorn") == []
            and await ids(store, "buoy") == ["d"]
            and await ids(store, "fourth") == ["d"]
        )
        assert (await _index_state(sqlite_url))[1]
    finally:
        await store.close()


async def test_sqlite_turn_writes_index_the_waiting_rows_now_and_then(sqlite_url, monkeypatch):
    from switchboard.store import NewConversation, NewMessage, open_store, turn_writes

    monkeypatch.setattr(turn_writes, "INDEX_EVERY", 5)
    store = await open_store(sqlite_url)
    try:
        written, held_after = [], []
        for n in range(4):
            cid = f"t{n}"
            first = NewMessage(f"{cid}-q", None, "user", f"question number {n}")
            await store.append(cid, [first], create=NewConversation(ANN, f"turn {n}", None, None))
            await store.append(cid, [NewMessage(f"{cid}-a", first.id, "assistant", f"answer number {n}")])
            written += [(cid, f"question number {n}"), (cid, f"answer number {n}"), (cid, f"turn {n}")]
            held_after.append((await _index_state(sqlite_url))[2])
        # the 5th message's write indexed it and the four before it, with no search; 6th to 8th wait
        assert held_after == [0, 0, 5, 5]
        for q in ("number", "answer number 3", "question number 0", "turn 2"):
            assert await ids(store, q) == _like(written, q), q
        assert (await _index_state(sqlite_url))[1:] == (True, 8)
    finally:
        await store.close()


async def test_the_migration_keeps_what_the_index_held_before(sqlite_url):
    """Rows written before 0009 (indexed by the old triggers) stay found; the mark starts above them."""
    from alembic import command
    from sqlalchemy import text

    from switchboard.store import open_store
    from switchboard.store.engine import make_engine
    from switchboard.store.migrate import _config, migrate

    engine = make_engine(sqlite_url)
    try:
        async with engine.begin() as conn:

            def before(sync):
                command.upgrade(_config(sync), "0008")
                sync.execute(
                    text(
                        "INSERT INTO conversations (id, owner, title, levels_used, message_count, created_at, "
                        "updated_at) VALUES ('old', :o, 'Old title', '[]', 1, '2026-01-01 00:00:00', "
                        "'2026-01-01 00:00:00')"
                    ),
                    {"o": ANN},
                )
                sync.execute(
                    text(
                        "INSERT INTO messages (id, conversation_id, seq, role, content, data, created_at) "
                        "VALUES ('old-1', 'old', 1, 'user', 'written long ago', '{}', '2026-01-01 00:00:00')"
                    )
                )

            await conn.run_sync(before)
        await migrate(engine)
    finally:
        await engine.dispose()
    marks, whole, held = await _index_state(sqlite_url)
    assert marks == {"messages": 1, "conversations": 1} and whole and held == 1
    store = await open_store(sqlite_url)
    try:
        await store.delete_conversation("old")  # held by the index: its text leaves it
        assert await ids(store, "long ago") == [] and await ids(store, "old title") == []
        assert (await _index_state(sqlite_url))[1:] == (True, 0)
    finally:
        await store.close()
