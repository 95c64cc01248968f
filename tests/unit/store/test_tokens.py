"""Personal API tokens in the store, on SQLite and on a real Postgres."""

import hashlib

from sqlalchemy import select

from switchboard.store.models import api_tokens
from switchboard.store.tokens import TokenStore, split_token


async def test_a_token_is_made_verified_listed_and_revoked(store):
    tokens = TokenStore(store)
    made = await tokens.create("ann@example.com", "laptop")
    assert made.secret.startswith(f"sb_{made.token.id}_") and len(made.secret) > 40
    assert made.token.last_used_at is None

    found = await tokens.verify(made.secret)
    assert found is not None and found.owner == "ann@example.com" and found.name == "laptop"
    listed = await tokens.list("ann@example.com")
    assert [t.id for t in listed] == [made.token.id] and listed[0].last_used_at is not None
    assert await tokens.list("bob@example.com") == []

    assert not await tokens.revoke("bob@example.com", made.token.id)  # not his
    assert await tokens.verify(made.secret) is not None
    assert await tokens.revoke("ann@example.com", made.token.id)
    assert await tokens.verify(made.secret) is None
    assert not await tokens.revoke("ann@example.com", made.token.id)


async def test_only_a_hash_of_the_secret_is_stored(store):
    made = await TokenStore(store).create("ann@example.com", "ci")
    secret = split_token(made.secret)[1]
    row = await store.read("look", lambda conn: conn.execute(select(api_tokens)).mappings().one())
    assert secret not in str(dict(row)) and row["secret_hash"] == hashlib.sha256(secret.encode()).hexdigest()


async def test_wrong_malformed_and_unknown_tokens_are_refused(store):
    tokens = TokenStore(store)
    made = await tokens.create("ann@example.com", "x")
    token_id = made.token.id
    for text in (
        f"sb_{token_id}_wrong-secret",
        f"sb_{token_id}_",
        "sb_",
        "sb_nounderscore",
        made.secret[3:],
        f"sb_{'0' * 16}_{split_token(made.secret)[1]}",
        made.secret + "x",
        "",
    ):
        assert await tokens.verify(text) is None, text
    assert await tokens.verify(made.secret) is not None


async def test_a_store_made_before_tokens_is_migrated_and_keeps_its_conversations(store_url):
    from alembic import command

    from switchboard.store import open_store
    from switchboard.store.engine import make_engine
    from switchboard.store.migrate import _config

    engine = make_engine(store_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(_config(c), "0001"))
            await conn.exec_driver_sql(
                "INSERT INTO conversations (id, owner, title, levels_used, message_count, "
                "created_at, updated_at) VALUES ('old', 'ann', 'before tokens', '[]', 0, "
                "'2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            )
    finally:
        await engine.dispose()
    store = await open_store(store_url)
    try:
        assert (await store.get_conversation("old")).title == "before tokens"
        made = await TokenStore(store).create("ann", "after the upgrade")
        assert (await TokenStore(store).verify(made.secret)).owner == "ann"
    finally:
        await store.close()


async def test_concurrent_creates_never_pass_the_cap(store):
    """The count and the insert are one step: 120 creates at once make at most the cap."""
    import asyncio

    from switchboard.errors import BadRequest
    from switchboard.store.tokens import MAX_TOKENS_PER_USER

    tokens = TokenStore(store)
    await tokens.create("bob@example.com", "someone else's")
    outcomes = await asyncio.gather(
        *(tokens.create("ann@example.com", f"t{i}") for i in range(120)), return_exceptions=True
    )
    refused = [o for o in outcomes if isinstance(o, BadRequest)]
    assert not [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, BadRequest)]
    assert len(await tokens.list("ann@example.com")) == MAX_TOKENS_PER_USER == 120 - len(refused)
    assert "Revoke" in refused[0].action
