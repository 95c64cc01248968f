"""The audit log's one writer and reader in the database (the port: `append`, `checkpoint`,
`prune`, and the reads `verify`, `export` and the admin route use), over the conversation store's
engine and error translation. SQLite serializes writers itself (BEGIN IMMEDIATE); on PostgreSQL
each append takes a transaction-scoped advisory lock, so processes sharing the database extend
one chain. The lock is held only while the batch is written, never across a tool call. Once a
process knows the chain's end, an append there is one statement (`audit_pg.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Connection, and_, bindparam, delete, exists, func, insert, select, text

from ...audit.chain import GENESIS, Sealed, seal
from ...audit.keys import public_text, sign_checkpoint
from ..models import audit_checkpoints, audit_prunes, audit_records
from ..prepared import Statements
from ..repo import ConversationStore
from .audit_pg import APPEND, append_values

__all__ = ["AuditQuery", "AuditStore", "Checkpoint", "Pending", "ts_text"]

_LOCK = 0x5357_4155_4449_54  # pg_advisory_xact_lock key of the chain ("SWAUDIT")


def ts_text(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _ts(text_: str) -> datetime:
    return datetime.fromisoformat(text_.replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class Pending:
    """A record not yet in the chain: its time, and its fields (`kind` among them)."""

    ts: str
    fields: dict[str, Any]
    once: bool = False  # written only if no record of this kind and user is there yet (a user first seen)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    seq: int
    ts: str
    hash: str
    signature: str
    public_key: str


@dataclass(frozen=True, slots=True)
class AuditQuery:
    user: str | None = None
    tool: str | None = None
    server: str | None = None
    decision: str | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    after: int | None = None  # the cursor: records with a higher seq than this (oldest first)
    before: int | None = None  # ... or a lower one (newest first)
    limit: int = 100


# Built once (the store compiles each once): what the append transaction runs.
_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:key)")
_TAIL = select(audit_records.c.seq, audit_records.c.hash).order_by(audit_records.c.seq.desc()).limit(1)
_PRUNED_THROUGH = select(func.max(audit_prunes.c.through_seq))
_CHECKPOINT_HASH = select(audit_checkpoints.c.hash).where(audit_checkpoints.c.seq == bindparam("seq"))
_LAST_CHECKPOINT = select(func.max(audit_checkpoints.c.seq))
_HAS = (
    select(audit_records.c.seq)
    .where(audit_records.c.kind == bindparam("kind"), audit_records.c.user == bindparam("user"))
    .limit(1)
)
_INSERT_RECORDS = insert(audit_records)
_INSERT_CHECKPOINT = insert(audit_checkpoints)


def _columns(record: Sealed) -> dict[str, Any]:
    f = record.fields
    return {
        "seq": record.seq,
        "ts": _ts(record.ts),
        "kind": f["kind"],
        "user": f.get("user"),
        "server": f.get("server"),
        "tool": f.get("tool"),
        "decision": f.get("decision"),
        "prev": record.prev,
        "hash": record.hash,
        "body": record.body,
    }


class AuditStore:
    def __init__(self, store: ConversationStore, key: Ed25519PrivateKey, *, checkpoint_every: int = 1000) -> None:
        self._store = store
        self._key = key
        self.checkpoint_every = checkpoint_every
        self._checkpointed = 0  # the highest checkpoint seen (another process may have made a later one)
        self._end: tuple[int, str] | None = None  # (seq, hash) of the chain's end as this process last saw it

    @property
    def dialect(self) -> str:
        return self._store.dialect

    def _lock(self, conn: Statements) -> None:
        if self.dialect == "postgresql":
            conn.execute(_ADVISORY_LOCK, {"key": _LOCK})

    @staticmethod
    def _tail(conn: Statements) -> tuple[int, str]:
        row = conn.execute(_TAIL, {}).first()
        if row is not None:
            return int(row[0]), str(row[1])
        # everything was pruned (or nothing written): the chain goes on from the last boundary
        through = conn.execute(_PRUNED_THROUGH, {}).scalar_one()
        if through:
            return int(through), str(conn.execute(_CHECKPOINT_HASH, {"seq": through}).scalar_one())
        return 0, GENESIS

    def _checkpoint_in(self, conn: Statements, seq: int, hash_: str, *, force: bool) -> Checkpoint | None:
        if not force and seq - self._checkpointed < self.checkpoint_every:
            return None  # (the last checkpoint this process knows of is a lower bound: no query needed)
        last = self._checkpointed = max(self._checkpointed, conn.execute(_LAST_CHECKPOINT, {}).scalar_one() or 0)
        if seq <= last or (not force and seq - last < self.checkpoint_every):
            return None
        now = datetime.now(UTC)
        ts = ts_text(now)
        cp = Checkpoint(seq, ts, hash_, sign_checkpoint(self._key, seq, hash_, ts), public_text(self._key))
        values = {"seq": seq, "ts": now, "hash": hash_, "signature": cp.signature, "public_key": cp.public_key}
        conn.execute(_INSERT_CHECKPOINT, values)
        return cp

    async def append(self, batch: Sequence[Pending]) -> tuple[int, list[Checkpoint]]:
        """Write `batch` at the chain's end in one transaction: (the last seq, the checkpoints made:
        one every `checkpoint_every` records)."""
        if await self._append_at_known_end(batch):
            assert self._end is not None
            return self._end[0], []

        def work(conn: Statements) -> tuple[int, str, list[Checkpoint]]:
            self._lock(conn)
            seq, prev = self._tail(conn)
            rows, made, seen = [], [], set()
            for pending in batch:
                if pending.once:
                    key = (pending.fields["kind"], pending.fields.get("user"))
                    if key in seen or self._has(conn, *key):
                        continue
                    seen.add(key)
                seq += 1
                record = seal(seq, prev, pending.ts, pending.fields)
                rows.append(_columns(record))
                prev = record.hash
                if len(rows) % self.checkpoint_every == 0 or pending is batch[-1]:
                    conn.execute(_INSERT_RECORDS, rows)
                    rows = []
                    cp = self._checkpoint_in(conn, seq, prev, force=False)
                    if cp is not None:
                        made.append(cp)
            if rows:
                conn.execute(_INSERT_RECORDS, rows)
            return seq, prev, made

        # prepared: on a SQLite file, on the sqlite3 connection with the statements compiled once
        last, end_hash, made = await self._store.transaction_prepared("write the audit log", work)
        self._end = (last, end_hash)
        if made:  # committed: the next checkpoint is due `checkpoint_every` records after it
            self._checkpointed = max(self._checkpointed, made[-1].seq)
        return last, made

    async def _append_at_known_end(self, batch: Sequence[Pending]) -> bool:
        """PostgreSQL: `batch` sealed after the chain's end as this process last saw it, and written
        by one statement (audit_pg.py) if the chain still ends there. Not when the end is unknown,
        a record is written only once (that needs a read first), or a checkpoint may be due."""
        end = self._end
        if (
            self.dialect != "postgresql"
            or end is None
            or not batch
            or any(pending.once for pending in batch)
            or end[0] + len(batch) - self._checkpointed >= self.checkpoint_every
        ):
            return False
        seq, prev = end
        records = []
        for pending in batch:
            seq += 1
            records.append(record := seal(seq, prev, pending.ts, pending.fields))
            prev = record.hash
        values = append_values(_LOCK, end[0], end[1], records)
        done = await self._store.transaction_prepared(
            "write the audit log",
            lambda d: d.execute(APPEND, values).scalar_one(),
            single=True,
        )
        if not done:  # another process appended meanwhile: the usual way reads the new end
            return False
        self._end = (seq, prev)
        return True

    @staticmethod
    def _has(conn: Statements, kind: str, user: str | None) -> bool:
        return conn.execute(_HAS, {"kind": kind, "user": user}).first() is not None

    async def checkpoint(self) -> Checkpoint | None:
        """A checkpoint of the chain's end now, unless it has one already."""

        def work(conn: Statements) -> Checkpoint | None:
            self._lock(conn)
            seq, prev = self._tail(conn)
            return self._checkpoint_in(conn, seq, prev, force=True) if seq else None

        made = await self._store.transaction_prepared("sign an audit checkpoint", work)
        if made is not None:
            self._checkpointed = max(self._checkpointed, made.seq)
        return made

    async def prune(self, older_than: datetime, ts: str) -> int | None:
        """Remove the records before the newest checkpoint whose record is older than
        `older_than`, whole spans only, and append a record saying so: the boundary, or None."""

        def work(conn: Connection) -> int | None:
            self._lock(conn)
            done = conn.execute(select(func.max(audit_prunes.c.through_seq))).scalar() or 0
            boundary = conn.execute(
                select(func.max(audit_checkpoints.c.seq)).where(
                    audit_checkpoints.c.seq > done,
                    exists().where(
                        and_(audit_records.c.seq == audit_checkpoints.c.seq, audit_records.c.ts < older_than)
                    ),
                )
            ).scalar()
            if not boundary:
                return None
            seq, prev = self._tail(conn)
            conn.execute(insert(audit_prunes).values(through_seq=boundary, ts=_ts(ts)))
            conn.execute(delete(audit_records).where(audit_records.c.seq <= boundary))
            fields = {"kind": "audit_pruned", "through_seq": int(boundary), "older_than": ts_text(older_than)}
            conn.execute(insert(audit_records).values(**_columns(seal(seq + 1, prev, ts, fields))))
            return int(boundary)

        boundary = await self._store.transaction("prune the audit log", work)
        self._end = None  # (the prune's own record moved the end)
        return boundary

    # reads

    async def public_keys(self) -> list[str]:
        stmt = select(audit_checkpoints.c.public_key).distinct()
        return await self._store.read("read the audit log", lambda c: [str(k) for k in c.execute(stmt).scalars()])

    async def checkpoints(self, from_seq: int = 0) -> list[Checkpoint]:
        stmt = select(audit_checkpoints).where(audit_checkpoints.c.seq >= from_seq).order_by(audit_checkpoints.c.seq)

        def work(conn: Connection) -> list[Checkpoint]:
            return [
                Checkpoint(int(r["seq"]), ts_text(r["ts"]), r["hash"], r["signature"], r["public_key"])
                for r in conn.execute(stmt).mappings()
            ]

        return await self._store.read("read the audit checkpoints", work)

    async def pruned_through(self) -> int:
        stmt = select(func.max(audit_prunes.c.through_seq))
        return await self._store.read("read the audit log", lambda c: int(c.execute(stmt).scalar() or 0))

    async def hash_at(self, seq: int) -> str | None:
        stmt = select(audit_records.c.hash).where(audit_records.c.seq == seq)
        return await self._store.read("read the audit log", lambda c: c.execute(stmt).scalar())

    async def page(self, after: int, size: int) -> list[tuple[Any, ...]]:
        """(seq, prev, hash, kind, user, server, tool, decision, body) of up to `size` records after `after`."""
        c = audit_records.c
        stmt = (
            select(c.seq, c.prev, c.hash, c.kind, c.user, c.server, c.tool, c.decision, c.body)
            .where(c.seq > after)
            .order_by(c.seq)
            .limit(size)
        )
        return await self._store.read("read the audit log", lambda conn: [tuple(r) for r in conn.execute(stmt)])

    async def find(self, query: AuditQuery) -> list[tuple[int, str]]:
        """(seq, body) of the records the query picks: oldest first after a cursor, else newest first."""
        return [(seq, body) for seq, body, _ in await self.find_with_hash(query)]

    async def find_with_hash(self, query: AuditQuery) -> list[tuple[int, str, str]]:
        c = audit_records.c
        where = [
            column == value
            for column, value in (
                (c.user, query.user),
                (c.tool, query.tool),
                (c.server, query.server),
                (c.decision, query.decision),
                (c.kind, query.kind),
            )
            if value
        ]
        if query.since is not None:
            where.append(c.ts >= query.since)
        if query.until is not None:
            where.append(c.ts < query.until)
        if query.after is not None:
            where.append(c.seq > query.after)
        if query.before is not None:
            where.append(c.seq < query.before)
        order = c.seq.asc() if query.after is not None else c.seq.desc()
        stmt = select(c.seq, c.body, c.hash).where(*where).order_by(order).limit(query.limit)
        return await self._store.read(
            "read the audit log",
            lambda conn: [(int(r[0]), str(r[1]), str(r[2])) for r in conn.execute(stmt)],
        )
