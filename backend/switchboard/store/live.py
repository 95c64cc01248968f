"""Turns across app processes on one PostgreSQL: the `live_turns`, `app_processes` and
`turn_events` tables, and Postgres' LISTEN/NOTIFY as the message bus between processes.

No new server is needed: every process already has the database. Messages to other processes go
out through one `Outbox` per process: whatever is waiting is sent in one statement, one statement
at a time, so they arrive in the order posted and a busy process sends more per round trip. The
rows a message announces (`turn_events`) are inserted by the same statement, so a process that is
told of them can read them. Postgres caps a payload at 8000 bytes (`MAX_PAYLOAD`): the relay puts
small batches of events inside the message and sends larger ones through `turn_events`.

`turn_events` is UNLOGGED on Postgres (migration 0007): it is a relay buffer, cleared at each
turn's start, not a record (the conversation is stored in `messages`); its inserts write no WAL, so
a batch's commit does not wait for a disk flush."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, String, bindparam, delete, exists, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import make_url

from ..telemetry import store_timer
from .engine import CONNECT_TIMEOUT_S, unavailable
from .models import UTCDateTime, app_processes, live_turns, turn_events
from .prepared import Statements
from .repo import ConversationStore

__all__ = ["MAX_PAYLOAD", "EventRow", "LiveRow", "LiveTurns", "Note", "Outbox"]

log = logging.getLogger("switchboard.store")

LiveRow = tuple[str, str, datetime | None]  # (owner, process id, that process's last heartbeat)
EventRow = tuple[str, int, str]  # (conversation id, seq, body) for turn_events
Note = tuple[str, str]  # (channel, JSON payload)
Batch = tuple[list[EventRow], list[Note]]
MAX_PAYLOAD = 7900  # bytes of one NOTIFY payload, under Postgres' 8000

_NOTIFY = "SELECT pg_notify(ch, p) FROM unnest($1::text[], $2::text[]) AS t(ch, p)"
_SEND = _NOTIFY
_SEND_WITH_ROWS = (
    "WITH kept AS (INSERT INTO turn_events (conversation_id, seq, body) "
    "SELECT * FROM unnest($3::varchar[], $4::int[], $5::text[]) ON CONFLICT DO NOTHING) " + _NOTIFY
)


def _connection_lost(exc: Exception) -> bool:
    import asyncpg

    return isinstance(exc, OSError | asyncpg.exceptions.ConnectionDoesNotExistError | asyncpg.exceptions.InterfaceError)


class Outbox:
    """Messages to other processes, sent in the order posted: each statement sends everything
    waiting (with the rows it announces), and the next waits for it. An entry is a note, or a
    function called when its statement is built (a turn's events gathered until then)."""

    def __init__(self, send: Callable[[list[EventRow], list[Note]], Awaitable[None]]) -> None:
        self._send = send
        self._waiting: list[tuple[Note | Callable[[], Batch], asyncio.Future[None] | None]] = []
        self._sender: asyncio.Task[None] | None = None

    def post(self, entry: Note | Callable[[], Batch], *, wait: bool = False) -> asyncio.Future[None] | None:
        """Queue an entry; with `wait`, a future done once its statement committed (or failed)."""
        done = asyncio.get_running_loop().create_future() if wait else None
        self._waiting.append((entry, done))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._drain(), name="relay-outbox")
        return done

    async def _drain(self) -> None:
        while self._waiting:
            taken, self._waiting = self._waiting, []
            rows: list[EventRow] = []
            notes: list[Note] = []
            for entry, _ in taken:
                if callable(entry):
                    more_rows, more_notes = entry()
                    rows += more_rows
                    notes += more_notes
                else:
                    notes.append(entry)
            failed: BaseException | None = None
            try:
                if notes or rows:
                    await self._send(rows, notes)
            except Exception as exc:
                failed = exc
                log.warning(
                    "could not reach the other app processes: %s",
                    getattr(exc, "message", exc),
                    extra={"event": "relay_failed"},
                )
            for _, done in taken:
                if done is None or done.done():
                    continue
                if failed is not None:
                    done.set_exception(failed)
                else:
                    done.set_result(None)

    async def close(self) -> None:
        if self._sender is not None:
            with suppress(Exception):
                await self._sender


def _claim_statement() -> Any:
    """``WITH claimed AS (INSERT INTO live_turns ... ON CONFLICT DO NOTHING RETURNING ...),
    cleared AS (DELETE FROM turn_events ... WHERE the row was claimed) SELECT claimed?, holder``:
    the claim and the clearing of the conversation's earlier events in one round trip. The
    holder is read from the statement's snapshot, which does not hold a row committed after it
    began (then NULL: ``claim`` asks again in two steps)."""
    cid = bindparam("cid", type_=String)
    claimed = (
        postgresql.insert(live_turns)
        .values(
            conversation_id=cid,
            owner=bindparam("owner", type_=String),
            process_id=bindparam("pid", type_=String),
            started_at=bindparam("now", type_=UTCDateTime()),
        )
        .on_conflict_do_nothing()
        .returning(live_turns.c.process_id)
        .cte("claimed")
    )
    won = exists(select(claimed.c.process_id))
    cleared = (
        delete(turn_events).where(turn_events.c.conversation_id == cid, won).returning(turn_events.c.seq).cte("cleared")
    )
    holder = select(live_turns.c.process_id).where(live_turns.c.conversation_id == cid).scalar_subquery()
    return select(won.label("won"), holder.label("holder")).add_cte(claimed).add_cte(cleared)


_CLAIM = _claim_statement()
# (built once: the driver path compiles a statement once per statement object)
_RELEASE = delete(live_turns).where(
    live_turns.c.conversation_id == bindparam("cid", type_=String),
    live_turns.c.process_id == bindparam("pid", type_=String),
)


class LiveTurns:
    def __init__(self, store: ConversationStore) -> None:
        self._store = store
        self._listener: Any = None  # the asyncpg connection that LISTENs
        self._sender: Any = None  # the asyncpg connection the outbox sends on (opened on first use)
        self._listening: tuple[list[str], Any] = ([], None)  # the channels, and what each message goes to
        self._handling: set[asyncio.Future[Any]] = set()  # messages being handled (held so none is collected midway)
        self.outbox = Outbox(self._send)

    async def heartbeat(self, process_id: str) -> None:
        now = datetime.now(UTC)
        stmt = postgresql.insert(app_processes).values(id=process_id, heartbeat_at=now)
        stmt = stmt.on_conflict_do_update(index_elements=[app_processes.c.id], set_={"heartbeat_at": now})
        await self._store.transaction("record this process's heartbeat", lambda c: c.execute(stmt), single=True)

    async def claim(self, conversation_id: str, owner: str, process_id: str) -> str | None:
        """Record that `process_id` runs this conversation's turn; None when it now does, else the
        process that already runs one. One statement (`_CLAIM`, no BEGIN/COMMIT) in the usual
        case; the two-step form when the row in the way was committed after that statement's
        snapshot, which therefore cannot name its process."""
        params = {"cid": conversation_id, "owner": owner, "pid": process_id, "now": datetime.now(UTC)}

        def one_statement(conn: Statements) -> tuple[bool, str | None]:
            won, holder = conn.execute(_CLAIM, params).one()
            return bool(won), holder

        won, holder = await self._store.transaction_prepared("start the answer", one_statement, single=True)
        if won or holder is not None:
            return None if won else holder
        stmt = (
            postgresql.insert(live_turns)
            .values(conversation_id=conversation_id, owner=owner, process_id=process_id, started_at=params["now"])
            .on_conflict_do_nothing()
        )

        def work(conn: Connection) -> str | None:
            if conn.execute(stmt).rowcount:
                conn.execute(delete(turn_events).where(turn_events.c.conversation_id == conversation_id))
                return None
            return conn.execute(
                select(live_turns.c.process_id).where(live_turns.c.conversation_id == conversation_id)
            ).scalar()

        return await self._store.transaction("start the answer", work)

    async def release(self, conversation_id: str, process_id: str) -> None:
        params = {"cid": conversation_id, "pid": process_id}
        await self._store.transaction_prepared("finish the answer", lambda c: c.execute(_RELEASE, params), single=True)

    async def row(self, conversation_id: str) -> LiveRow | None:
        stmt = (
            select(live_turns.c.owner, live_turns.c.process_id, app_processes.c.heartbeat_at)
            .join(app_processes, app_processes.c.id == live_turns.c.process_id, isouter=True)
            .where(live_turns.c.conversation_id == conversation_id)
        )
        found = await self._store.read("find the running answer", lambda c: c.execute(stmt).first())
        return (found[0], found[1], found[2]) if found else None

    async def processes_of(self, owner: str) -> list[str]:
        """The processes running a turn of this user's."""
        stmt = select(live_turns.c.process_id).where(live_turns.c.owner == owner).distinct()
        return await self._store.read("find your running answers", lambda c: list(c.execute(stmt).scalars()))

    async def read_events(self, conversation_id: str, after: int) -> list[tuple[int, str]]:
        stmt = (
            select(turn_events.c.seq, turn_events.c.body)
            .where(turn_events.c.conversation_id == conversation_id, turn_events.c.seq > after)
            .order_by(turn_events.c.seq)
        )
        return await self._store.read("read the answer's events", lambda c: [tuple(r) for r in c.execute(stmt)])

    async def take_dead(self, lease_s: float, process_id: str) -> list[tuple[str, str, str]]:
        """The turns of processes silent for longer than the lease, taken over (their rows removed):
        `(conversation_id, owner, dead process)`. Taking is atomic: one process reports each."""
        cutoff = datetime.now(UTC) - timedelta(seconds=lease_s)

        def work(conn: Connection) -> list[tuple[str, str, str]]:
            alive = select(app_processes.c.id).where(app_processes.c.heartbeat_at >= cutoff)
            taken = conn.execute(
                delete(live_turns)
                .where(live_turns.c.process_id.not_in(alive), live_turns.c.process_id != process_id)
                .returning(live_turns.c.conversation_id, live_turns.c.owner, live_turns.c.process_id)
            )
            gone = [tuple(r) for r in taken]
            conn.execute(delete(app_processes).where(app_processes.c.heartbeat_at < cutoff))
            return gone

        return await self._store.transaction("end the answers of a stopped process", work)

    async def forget(self, process_id: str) -> None:
        """A process that stops: its heartbeat row goes (its turns were released one by one)."""
        stmt = delete(app_processes).where(app_processes.c.id == process_id)
        await self._store.transaction("sign this process off", lambda c: c.execute(stmt), single=True)

    async def alive(self, lease_s: float, besides: str) -> list[str]:
        """The other processes that heartbeated within the lease."""
        cutoff = datetime.now(UTC) - timedelta(seconds=lease_s)
        stmt = select(app_processes.c.id).where(app_processes.c.heartbeat_at >= cutoff, app_processes.c.id != besides)
        return await self._store.read("find the other app processes", lambda c: list(c.execute(stmt).scalars()))

    async def share_presence(self, process_id: str, presence: dict[str, Any]) -> None:
        """What this process holds for each user (see `app_processes.presence`); kept on its heartbeat
        row, so it goes when the process signs off and is ignored once the process falls silent."""
        stmt = update(app_processes).where(app_processes.c.id == process_id).values(presence=presence)
        await self._store.transaction("share this process's open sessions", lambda c: c.execute(stmt), single=True)

    async def presences(self, lease_s: float, besides: str) -> list[dict[str, Any]]:
        """What the other live processes last shared, one mapping each."""
        cutoff = datetime.now(UTC) - timedelta(seconds=lease_s)
        stmt = select(app_processes.c.presence).where(
            app_processes.c.heartbeat_at >= cutoff,
            app_processes.c.id != besides,
            app_processes.c.presence.is_not(None),
        )
        return await self._store.read(
            "read the other processes' open sessions", lambda c: list(c.execute(stmt).scalars())
        )

    async def notify(self, channel: str, text: str) -> None:
        """Send one message (its text), after everything posted before it; returns once it is sent."""
        done = self.outbox.post((channel, text), wait=True)
        assert done is not None
        await done

    async def _send(self, rows: list[EventRow], notes: list[Note]) -> None:
        """One statement (its own transaction) on a connection of its own: the live path skips the
        pool, and the prepared statement is parsed once."""
        args: list[Any] = [[n[0] for n in notes], [n[1] for n in notes]]
        if rows:
            args += [[r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]]
        for attempt in (1, 2):
            try:
                with store_timer("reach the other app processes"):
                    if self._sender is None or self._sender.is_closed():
                        self._sender = await self._connect(sending=True)
                    await self._sender.execute(_SEND_WITH_ROWS if rows else _SEND, *args)
                return
            except Exception as exc:
                sender, self._sender = self._sender, None
                if sender is not None:
                    sender.terminate()
                if attempt == 1 and _connection_lost(exc):  # the database restarted: once more, on a new one
                    continue
                raise unavailable(self._store.url, exc, "reach the other app processes through") from exc

    async def _connect(self, *, sending: bool = False) -> Any:
        """A connection of the relay's own. The sending one commits without waiting for the disk
        (`synchronous_commit=off`): what it writes is a relay buffer and messages, which a crash
        of the database loses with the turns they serve anyway."""
        import asyncpg

        url = make_url(self._store.url).set(drivername="postgresql")
        settings = {"synchronous_commit": "off"} if sending else None
        return await asyncpg.connect(
            url.render_as_string(hide_password=False), timeout=CONNECT_TIMEOUT_S, server_settings=settings
        )

    async def listen(self, channels: list[str], on_message: Callable[[str], Awaitable[None] | None]) -> None:
        """Deliver the messages (their texts) sent to these channels to `on_message`, at once, in
        the order they come; what it returns to await runs as a task of its own. The sending
        connection opens now too, so that the first message does not wait for it."""
        loop = asyncio.get_running_loop()

        def received(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            rest = on_message(payload)
            if rest is not None:
                task = asyncio.ensure_future(rest, loop=loop)
                self._handling.add(task)
                task.add_done_callback(self._handling.discard)

        self._listening = (channels, received)
        await self._listen()
        self._sender = await self._connect(sending=True)

    async def _listen(self) -> None:
        channels, received = self._listening
        self._listener = await self._connect()
        for channel in channels:
            await self._listener.add_listener(channel, received)

    async def keep_listening(self) -> bool:
        """Listen again if the connection was lost (the database restarted); True when it was.
        Messages sent meanwhile are lost: a follower reads the events it missed from the table."""
        if self._listener is None or not self._listener.is_closed():
            return False
        try:
            await self._listen()
        except Exception as exc:
            if not self._listener.is_closed():  # half set up: the next heartbeat starts again
                self._listener.terminate()
            raise unavailable(self._store.url, exc, "listen to the other app processes through") from exc
        return True

    async def close(self) -> None:
        await self.outbox.close()
        if self._sender is not None:
            await self._sender.close()
            self._sender = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
