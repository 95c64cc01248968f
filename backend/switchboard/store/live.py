"""Turns across app processes on one PostgreSQL: the `live_turns`, `app_processes` and
`turn_events` tables, and Postgres' LISTEN/NOTIFY as the message bus between processes.

No new server is needed: every process already has the database. A notification carries only a
small JSON message (Postgres caps a payload at 8000 bytes); events themselves are copied into
`turn_events` and read from there, so their size does not matter."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import make_url

from .models import app_processes, live_turns, turn_events
from .repo import ConversationStore

__all__ = ["LiveTurns", "LiveRow"]

log = logging.getLogger("switchboard.store")

LiveRow = tuple[str, str, datetime | None]  # (owner, process id, that process's last heartbeat)


class LiveTurns:
    def __init__(self, store: ConversationStore) -> None:
        self._store = store
        self._listener: Any = None  # the asyncpg connection that LISTENs

    async def heartbeat(self, process_id: str) -> None:
        now = datetime.now(UTC)
        stmt = postgresql.insert(app_processes).values(id=process_id, heartbeat_at=now)
        stmt = stmt.on_conflict_do_update(index_elements=[app_processes.c.id], set_={"heartbeat_at": now})
        await self._store._run("record this process's heartbeat", lambda c: c.execute(stmt), write=True, single=True)

    async def claim(self, conversation_id: str, owner: str, process_id: str) -> str | None:
        """Record that `process_id` runs this conversation's turn; None when it now does, else the
        process that already runs one."""
        stmt = postgresql.insert(live_turns).values(conversation_id=conversation_id, owner=owner, process_id=process_id,
                                                     started_at=datetime.now(UTC)).on_conflict_do_nothing()  # fmt: skip

        def work(conn: Connection) -> str | None:
            if conn.execute(stmt).rowcount:
                conn.execute(delete(turn_events).where(turn_events.c.conversation_id == conversation_id))
                return None
            return conn.execute(select(live_turns.c.process_id)
                                .where(live_turns.c.conversation_id == conversation_id)).scalar()  # fmt: skip

        return await self._store._run("start the answer", work, write=True)

    async def release(self, conversation_id: str, process_id: str) -> None:
        stmt = delete(live_turns).where(live_turns.c.conversation_id == conversation_id,
                                        live_turns.c.process_id == process_id)  # fmt: skip
        await self._store._run("finish the answer", lambda c: c.execute(stmt), write=True, single=True)

    async def row(self, conversation_id: str) -> LiveRow | None:
        stmt = (select(live_turns.c.owner, live_turns.c.process_id, app_processes.c.heartbeat_at)
                .join(app_processes, app_processes.c.id == live_turns.c.process_id, isouter=True)
                .where(live_turns.c.conversation_id == conversation_id))  # fmt: skip
        found = await self._store._run("find the running answer", lambda c: c.execute(stmt).first(), write=False)
        return (found[0], found[1], found[2]) if found else None

    async def processes_of(self, owner: str) -> list[str]:
        """The processes running a turn of this user's."""
        stmt = select(live_turns.c.process_id).where(live_turns.c.owner == owner).distinct()
        return await self._store._run("find your running answers", lambda c: list(c.execute(stmt).scalars()), write=False)

    async def write_events(self, conversation_id: str, first_seq: int, bodies: list[str]) -> None:
        rows = [{"conversation_id": conversation_id, "seq": first_seq + n, "body": body} for n, body in enumerate(bodies)]
        await self._store._run("share the answer's events", lambda c: c.execute(insert(turn_events), rows), write=True)

    async def read_events(self, conversation_id: str, after: int) -> list[tuple[int, str]]:
        stmt = (select(turn_events.c.seq, turn_events.c.body)
                .where(turn_events.c.conversation_id == conversation_id, turn_events.c.seq > after)
                .order_by(turn_events.c.seq))  # fmt: skip
        return await self._store._run("read the answer's events", lambda c: [tuple(r) for r in c.execute(stmt)],
                                      write=False)  # fmt: skip

    async def last_seq(self, conversation_id: str) -> int:
        stmt = select(func.coalesce(func.max(turn_events.c.seq), 0)).where(turn_events.c.conversation_id == conversation_id)
        return await self._store._run("read the answer's events", lambda c: c.execute(stmt).scalar_one(), write=False)

    async def take_dead(self, lease_s: float, process_id: str) -> list[tuple[str, str, str]]:
        """The turns of processes silent for longer than the lease, taken over (their rows removed):
        `(conversation_id, owner, dead process)`. Taking is atomic: one process reports each."""
        cutoff = datetime.now(UTC) - timedelta(seconds=lease_s)

        def work(conn: Connection) -> list[tuple[str, str, str]]:
            alive = select(app_processes.c.id).where(app_processes.c.heartbeat_at >= cutoff)
            taken = conn.execute(delete(live_turns).where(live_turns.c.process_id.not_in(alive),
                                                          live_turns.c.process_id != process_id)
                                 .returning(live_turns.c.conversation_id, live_turns.c.owner, live_turns.c.process_id))  # fmt: skip
            gone = [tuple(r) for r in taken]
            conn.execute(delete(app_processes).where(app_processes.c.heartbeat_at < cutoff))
            return gone

        return await self._store._run("end the answers of a stopped process", work, write=True)

    async def forget(self, process_id: str) -> None:
        """A process that stops: its heartbeat row goes (its turns were released one by one)."""
        stmt = delete(app_processes).where(app_processes.c.id == process_id)
        await self._store._run("sign this process off", lambda c: c.execute(stmt), write=True, single=True)

    async def clear_events(self, conversation_id: str) -> None:
        stmt = delete(turn_events).where(turn_events.c.conversation_id == conversation_id)
        await self._store._run("clear the answer's events", lambda c: c.execute(stmt), write=True, single=True)

    async def notify(self, channel: str, message: dict[str, Any]) -> None:
        payload = json.dumps(message, separators=(",", ":"))
        stmt = text("SELECT pg_notify(:channel, :payload)").bindparams(channel=channel, payload=payload)
        await self._store._run("reach another app process", lambda c: c.execute(stmt), write=True, single=True)

    async def listen(self, channels: list[str], on_message: Callable[[dict[str, Any]], Coroutine[Any, Any, None]]) -> None:
        """Deliver the messages sent to these channels, each to `on_message` in its own task."""
        import asyncpg

        url = make_url(self._store.url).set(drivername="postgresql")
        self._listener = await asyncpg.connect(url.render_as_string(hide_password=False))
        loop = asyncio.get_running_loop()

        def received(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            try:
                message = json.loads(payload)
            except ValueError:
                log.warning("bad message between processes", extra={"event": "relay_bad_message"})
                return
            loop.create_task(on_message(message))

        for channel in channels:
            await self._listener.add_listener(channel, received)

    async def close(self) -> None:
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
