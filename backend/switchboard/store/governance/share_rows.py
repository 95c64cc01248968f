"""Users' requests to share their own servers (`server_shares`), and an approval's one
transaction: the server's row becomes the deployment's and its request goes, or neither."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from ...errors import Conflict, NotFound
from ..models import console_servers, server_shares
from ..repo import ConversationStore
from .console_rows import ConsoleRow

__all__ = ["ShareRecords", "ShareRequest"]


@dataclass(frozen=True, slots=True)
class ShareRequest:
    server: str
    owner: str
    name: str
    note: str | None
    state: str  # "pending" | "declined"
    requested_at: datetime
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in ShareRequest.__slots__}


def _request(row: Any) -> ShareRequest:
    return ShareRequest(**{key: row[key] for key in ShareRequest.__slots__})


class ShareRecords:
    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def requests(self, owner: str | None = None) -> list[ShareRequest]:
        stmt = select(server_shares).order_by(server_shares.c.requested_at)
        if owner is not None:
            stmt = stmt.where(server_shares.c.owner == owner)
        return await self._store.read(
            "read the share requests", lambda conn: [_request(r) for r in conn.execute(stmt).mappings()]
        )

    async def ask(self, request: ShareRequest) -> None:
        """A new pending request (over a declined one); Conflict when one is pending already."""
        table = server_shares

        def work(conn: Connection) -> None:
            found = conn.execute(select(table.c.state).where(table.c.server == request.server)).scalar_one_or_none()
            if found == "pending":
                raise Conflict(
                    f"your server '{request.name}' waits for an administrator already", action="Wait for the answer."
                )
            conn.execute(delete(table).where(table.c.server == request.server))
            conn.execute(insert(table).values(**request.as_dict()))

        await self._store.transaction("save the share request", work)

    async def decline(self, server: str, by: str, reason: str | None, now: datetime) -> None:
        table = server_shares
        stmt = (
            update(table)
            .where(table.c.server == server, table.c.state == "pending")
            .values(state="declined", decided_by=by, decided_at=now, reason=reason)
        )

        def work(conn: Connection) -> None:
            if conn.execute(stmt).rowcount == 0:
                raise NotFound(f"no request to share '{server}' is waiting", action="Reload the list.")

        await self._store.transaction("decline the share request", work)

    async def approve(self, row: ConsoleRow, *, expected: int) -> None:
        """Write the server's row as the deployment's (over the version `expected`, still its
        owner's) and drop its pending request, in one transaction."""
        shares, servers = server_shares, console_servers

        def work(conn: Connection) -> None:
            gone = conn.execute(delete(shares).where(shares.c.server == row.name, shares.c.state == "pending")).rowcount
            if gone == 0:
                raise NotFound(f"no request to share '{row.name}' is waiting", action="Reload the list.")
            values = {key: getattr(row, key) for key in ConsoleRow.__slots__}
            changed = conn.execute(
                update(servers).where(servers.c.name == row.name, servers.c.version == expected).values(**values)
            ).rowcount
            if changed == 0:
                raise Conflict(f"the server '{row.name}' was changed or removed meanwhile", action="Reload the list.")

        await self._store.transaction("share the server", work)

    async def forget(self, server: str) -> None:
        stmt = delete(server_shares).where(server_shares.c.server == server)
        await self._store.transaction("forget the share request", lambda conn: conn.execute(stmt).rowcount, single=True)
