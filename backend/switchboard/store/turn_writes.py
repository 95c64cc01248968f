"""What a turn writes: its messages, each appended under the conversation's leaf, together with
what came with them (files linked, allowances granted, the model or compliance levels that
changed, and for a new conversation its row), all in one transaction.

A turn writes once per round (``append``), not once per message: the events that announce
messages wait for that commit (docs/architecture.md, "Storing a turn"). ``add_message`` is the
one-message case; on Postgres a lone message is one statement (no BEGIN/COMMIT)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, NoReturn

from sqlalchemy import Connection, Insert, select
from sqlalchemy.exc import IntegrityError

from ..errors import BadRequest, Conflict, NotFound
from . import statements as S
from ._base import StoreBase
from .message_data import RoleData, UserData
from .models import messages
from .prepared import Statements
from .records import ROLES, Message
from .search import INDEX_EVERY, catch_up

__all__ = ["UNSET", "NewConversation", "NewMessage", "TurnWrites"]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()


@dataclass(frozen=True, slots=True)
class NewMessage:
    id: str
    parent_id: str | None
    role: str
    content: str
    data: RoleData = field(default_factory=UserData)  # its keys per role: message_data.py (none: {})


@dataclass(frozen=True, slots=True)
class NewConversation:
    owner: str
    title: str
    model: str | None
    compliance_level: str | None
    levels_used: Sequence[str | None] | None = None  # default: [compliance_level]

    def row(self, id: str, now: datetime) -> dict[str, Any]:
        levels = [self.compliance_level] if self.levels_used is None else list(self.levels_used)
        return {
            "id": id,
            "owner": self.owner,
            "title": self.title,
            "model": self.model,
            "compliance_level": self.compliance_level,
            "levels_used": levels,
            "leaf_id": None,
            "message_count": 0,
            "created_at": now,
            "updated_at": now,
        }


class _Refused(Exception):
    """A statement the database refused (its cause: the IntegrityError), to be explained after
    the rollback."""


def now_utc() -> datetime:
    return datetime.now(UTC)


class TurnWrites(StoreBase):
    _unindexed = 0  # SQLite: messages this process wrote since its writes last updated the search index
    _link_file: Insert  # made by ConversationStore for its dialect (insert, or nothing when linked already)
    _link_allowance: Insert

    async def add_message(
        self,
        conversation_id: str,
        *,
        id: str,
        parent_id: str | None,
        role: str,
        content: str,
        data: RoleData | None = None,
        files: Sequence[str] = (),
        allowances: Sequence[str] = (),
        model: str | _Unset | None = UNSET,
    ) -> Message:
        """Appends a message and makes it the conversation's leaf, in one transaction, together
        with what came with it: ``files`` linked to the conversation, ``allowances`` granted in it,
        and the conversation's ``model`` when it changed."""
        message = NewMessage(id, parent_id, role, content, data.copy() if data is not None else {})
        return (await self.append(conversation_id, [message], files=files, allowances=allowances, model=model))[0]

    async def append(
        self,
        conversation_id: str,
        new: Sequence[NewMessage],
        *,
        files: Sequence[str] = (),
        allowances: Sequence[str] = (),
        model: str | _Unset | None = UNSET,
        levels: tuple[str | None, Sequence[str | None]] | None = None,
        create: NewConversation | None = None,
        release_claim: str | None = None,
    ) -> list[Message]:
        """Appends messages in order (each one's parent is named; the last becomes the leaf), in
        one transaction with: ``create`` (the conversation's row, for a new one), ``files`` linked,
        ``allowances`` granted, the ``model`` and the compliance ``levels`` (level, every level
        used) when they changed, and ``release_claim``: the claim of that process on the
        conversation's turn deleted (the answer's last message). All or nothing; committed when
        this returns."""
        for message in new:
            if message.role not in ROLES:
                raise BadRequest(f"a message's role is one of {sorted(ROLES)}, not '{message.role}'")
        now = now_utc()
        rows: list[dict[str, Any]] = [
            {
                "id": m.id,
                "conversation_id": conversation_id,
                "parent_id": m.parent_id,
                "role": m.role,
                "content": m.content,
                "data": dict(m.data),
                "created_at": now,
                "seq_of": conversation_id,
            }
            for m in new
        ]
        created = create.row(conversation_id, now) if create is not None else None

        def refuse(conn: Statements, parent_id: str | None) -> NoReturn:
            if conn.execute(S.EXISTS, {"cid": conversation_id}).first() is None:
                raise NotFound(f"conversation '{conversation_id}' does not exist")
            raise BadRequest(f"message '{parent_id}' is not in conversation '{conversation_id}'")

        # SQLite: now and then a turn's write also adds the rows waiting to the search index (search.py)
        index_now = self._dialect == "sqlite" and self._unindexed + len(rows) >= INDEX_EVERY

        def work(conn: Statements) -> list[int]:
            if created is not None:
                try:
                    conn.execute(S.INSERT_CONVERSATION, created)
                except IntegrityError as exc:
                    raise Conflict(
                        f"a conversation with id '{conversation_id}' exists already; pick another id"
                    ) from exc
            seqs = []
            for row in rows:
                bump = {"cid": conversation_id, "new_leaf": row["id"], "now": now, "parent": row["parent_id"]}
                if conn.execute(S.BUMP if row["parent_id"] is None else S.BUMP_UNDER_PARENT, bump).rowcount != 1:
                    refuse(conn, row["parent_id"])
                try:
                    seqs.append(int(conn.execute(S.INSERT_MESSAGE, row).scalar_one()))
                except IntegrityError as exc:  # a taken id, or a constraint the database adds
                    raise _Refused from exc
            if files:
                conn.execute(self._link_file, [{"conversation_id": conversation_id, "file_id": f} for f in files])
            if allowances:
                conn.execute(self._link_allowance, [{"conversation_id": conversation_id, "key": k} for k in allowances])
            if model is not UNSET:
                conn.execute(S.SET_MODEL, {"cid": conversation_id, "new_model": model})
            if levels is not None:
                conn.execute(
                    S.SET_LEVELS,
                    {"cid": conversation_id, "new_level": levels[0], "new_levels": list(levels[1]), "now": now},
                )
            if release_claim is not None:
                conn.execute(S.RELEASE_CLAIM, {"cid": conversation_id, "claim_pid": release_claim})
            if index_now:
                catch_up(conn)
            return seqs

        def one_statement(conn: Statements) -> list[int]:
            row = rows[0]
            one = {
                "cid": conversation_id,
                "new_leaf": row["id"],
                "now": now,
                "parent": row["parent_id"],
                "mid": row["id"],
                "m_role": row["role"],
                "m_content": row["content"],
                "m_data": row["data"],
                "seq_of": conversation_id,
            }
            # (no key of `one` may be a column name: SQLAlchemy would take it for an INSERT value)
            if release_claim is not None:
                one["claim_pid"] = release_claim
            try:
                added = conn.execute(
                    S.ONE_STATEMENT_ADD[row["parent_id"] is not None, release_claim is not None], one
                ).first()
            except IntegrityError as exc:
                raise _Refused from exc
            if added is None:  # the UPDATE matched nothing, so nothing was written
                refuse(conn, row["parent_id"])
            return [int(added[0])]

        def created_with_first(conn: Statements) -> list[int]:
            assert created is not None
            row = rows[0]
            params = {
                "cid": conversation_id,
                "c_owner": created["owner"],
                "c_title": created["title"],
                "c_model": created["model"],
                "c_level": created["compliance_level"],
                "c_levels": created["levels_used"],
                "mid": row["id"],
                "m_role": row["role"],
                "m_content": row["content"],
                "m_data": row["data"],
                "now": now,
            }
            try:
                return [int(conn.execute(S.CREATE_WITH_FIRST, params).scalar_one())]
            except IntegrityError as exc:
                if conn.execute(S.EXISTS, {"cid": conversation_id}).first() is not None:
                    raise Conflict(
                        f"a conversation with id '{conversation_id}' exists already; pick another id"
                    ) from exc
                raise _Refused from exc

        # On Postgres a lone message, or a new conversation with its first message, is one statement.
        alone = len(rows) == 1 and not files and not allowances and model is UNSET and levels is None
        first = created is not None and rows[0]["parent_id"] is None
        postgres = self._dialect == "postgresql"
        single = postgres and alone and (created is None or (first and release_claim is None))
        chosen = (created_with_first if created is not None else one_statement) if single else work
        try:
            # On a SQLite file `work` runs on the sqlite3 connection (prepared.py): the statements are
            # the same, SQLAlchemy's handling of them cost more CPU than SQLite's work.
            # On Postgres the one statement runs on the asyncpg connection (pg_driver.py).
            seqs = await self.transaction_prepared("save the message", chosen, single=single)
        except _Refused as refused:
            # Rolled back. A taken id is the caller's mistake, not the store's: say so (checked
            # after the fact, so that the usual write needs no look-up first).
            cause = refused.__cause__
            for row in rows:
                if await self._message_exists(row["id"]):
                    raise Conflict(f"a message with id '{row['id']}' exists already") from cause
            raise self._failed("save the message", cause, write=True) from cause  # type: ignore[arg-type]
        self._unindexed = 0 if index_now else self._unindexed + len(rows)
        return [
            Message(r["id"], conversation_id, r["parent_id"], seq, r["role"], r["content"], r["data"], now)
            for r, seq in zip(rows, seqs, strict=True)
        ]

    async def _message_exists(self, id: str) -> bool:
        def work(conn: Connection) -> bool:
            return conn.execute(select(messages.c.id).where(messages.c.id == id)).first() is not None

        return await self.read("check the message id", work)
