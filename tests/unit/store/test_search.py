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
        await store.create_conversation(id=f"c{n:02d}", owner=ANN if n % 3 else BOB, title=f"title {n}", model=None,
                                        compliance_level=None)  # fmt: skip
        await store.add_message(f"c{n:02d}", id=f"m{n}", parent_id=None, role="user",
                                content="weekly meeting" if n % 2 else "lunch")  # fmt: skip
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
