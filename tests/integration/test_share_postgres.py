"""A user's server and its share request on PostgreSQL: the row's source `user:<email>` fits
(it was a 16-character column there), and an approval makes it the deployment's in one
transaction."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from switchboard.store import open_store
from switchboard.store.governance.console_rows import ConsoleRecords, ConsoleRow
from switchboard.store.governance.share_rows import ShareRecords, ShareRequest

OWNER = "someone.with.a.long.address@example.com"


async def _share(url: str) -> list[ConsoleRow]:
    store = await open_store(url)
    try:
        rows, shares = ConsoleRecords(store), ShareRecords(store)
        now = datetime.now(UTC)
        row = ConsoleRow(
            "notes.1a2b3c4d", f"user:{OWNER}", {"url": "https://x.example/mcp"}, True, "review", 1, OWNER, now
        )
        await rows.add(row)
        await shares.ask(ShareRequest(row.name, OWNER, "notes", "please", "pending", now))
        assert [r.state for r in await shares.requests(OWNER)] == ["pending"]
        shared = ConsoleRow(
            row.name, "admin", {**(row.entry or {}), "groups": ["staff"]}, True, "review", 2, "root", now
        )
        await shares.approve(shared, expected=1)
        assert await shares.requests() == []
        return await rows.servers()
    finally:
        await store.close()


def test_a_users_server_is_stored_and_shared_on_postgres(postgres_url):
    servers = asyncio.run(_share(postgres_url))
    assert [(s.name, s.source, s.version) for s in servers] == [("notes.1a2b3c4d", "admin", 2)]
