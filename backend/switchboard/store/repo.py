"""The conversation store: conversations, their message trees, allowances, file links, tool pins.

Every write is one transaction, committed when the method returns, so the caller may announce
what it wrote. Database errors are translated in ``_base.py``; ids that are taken or missing are
``Conflict`` and ``NotFound``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from ..errors import BadRequest, Conflict, NotFound
from ._base import StoreBase
from .engine import make_engine, unavailable
from .migrate import migrate as run_migrations
from .models import allowances, conversations, files, messages, tool_pins
from .records import ROLES, Conversation, Message
from .search import COMMON_MATCHES, SHORTEST_TEXT_QUERY, common_in_messages, matches

__all__ = ["UNSET", "ConversationStore", "open_store"]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()


def _now() -> datetime:
    return datetime.now(UTC)


def _conversation(row: Mapping[str, Any]) -> Conversation:
    return Conversation(
        id=row["id"],
        owner=row["owner"],
        title=row["title"],
        model=row["model"],
        compliance_level=row["compliance_level"],
        levels_used=tuple(row["levels_used"] or ()),
        leaf_id=row["leaf_id"],
        message_count=row["message_count"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _message(row: Mapping[str, Any]) -> Message:
    return Message(
        id=row["id"],
        conversation_id=row["conversation_id"],
        parent_id=row["parent_id"],
        seq=row["seq"],
        role=row["role"],
        content=row["content"],
        data=dict(row["data"] or {}),
        created_at=row["created_at"],
    )


async def open_store(url: str, *, migrate: bool = True) -> ConversationStore:
    """Connect (and by default migrate); ``StoreUnavailable`` says why when that fails."""
    engine = make_engine(url)
    store = ConversationStore(engine, url)
    try:
        if migrate:
            await run_migrations(engine)
        else:
            await store.ping()
    except BaseException as exc:
        await engine.dispose()
        if isinstance(exc, Exception):
            raise unavailable(url, exc, "open") from exc
        raise
    return store


class ConversationStore(StoreBase):
    # -- conversations ------------------------------------------------------------------------

    async def create_conversation(
        self, *, id: str, owner: str, title: str, model: str | None, compliance_level: str | None
    ) -> Conversation:
        now = _now()
        row = {
            "id": id,
            "owner": owner,
            "title": title,
            "model": model,
            "compliance_level": compliance_level,
            "levels_used": [compliance_level],
            "leaf_id": None,
            "message_count": 0,
            "created_at": now,
            "updated_at": now,
        }
        async with self._write("save the new conversation") as conn:
            try:
                await conn.execute(insert(conversations).values(**row))
            except IntegrityError as exc:
                raise Conflict(f"a conversation with id '{id}' exists already; pick another id") from exc
        return _conversation(row)

    async def get_conversation(self, id: str) -> Conversation | None:
        async with self._read("read the conversation") as conn:
            row = (await conn.execute(select(conversations).where(conversations.c.id == id))).mappings().first()
        return _conversation(row) if row else None

    async def list_conversations(
        self, owner: str, *, q: str | None = None, limit: int = 50, before: datetime | None = None
    ) -> list[Conversation]:
        """Newest ``updated_at`` first. ``q``: case-insensitive substring of the title or of any
        message's text (of the title only when shorter than 3 characters). ``before``: only
        conversations updated strictly earlier (the next page)."""
        stmt = select(conversations).where(conversations.c.owner == owner)
        if before is not None and before.tzinfo is None:
            raise ValueError("`before` must be timezone-aware (the store keeps UTC)")
        if before is not None:
            stmt = stmt.where(conversations.c.updated_at < before)
        q = (q or "").strip()
        async with self._read("list conversations") as conn:
            if q:
                common = False
                if len(q) >= SHORTEST_TEXT_QUERY:
                    probe = common_in_messages(q, self._dialect)
                    common = (await conn.execute(probe)).scalar_one() >= COMMON_MATCHES
                stmt = stmt.where(matches(q, self._dialect, common=common))
            stmt = stmt.order_by(conversations.c.updated_at.desc(), conversations.c.id.desc()).limit(max(0, limit))
            rows = (await conn.execute(stmt)).mappings().all()
        return [_conversation(row) for row in rows]

    async def update_conversation(
        self,
        id: str,
        *,
        title: str | _Unset = UNSET,
        model: str | None | _Unset = UNSET,
        compliance_level: str | None | _Unset = UNSET,
        levels_used: Sequence[str | None] | _Unset = UNSET,
        leaf_id: str | None | _Unset = UNSET,
    ) -> Conversation:
        """Changes the given fields; any change but the title also moves ``updated_at``."""
        changes: dict[str, Any] = {
            key: value
            for key, value in (
                ("title", title),
                ("model", model),
                ("compliance_level", compliance_level),
                ("levels_used", list(levels_used) if isinstance(levels_used, Sequence) else levels_used),
                ("leaf_id", leaf_id),
            )
            if value is not UNSET
        }
        if set(changes) - {"title"}:
            changes["updated_at"] = _now()
        async with self._write("save the conversation's changes") as conn:
            if changes:
                stmt = update(conversations).where(conversations.c.id == id).values(**changes)
                row = (await conn.execute(stmt.returning(*conversations.c))).mappings().first()
            else:
                row = (await conn.execute(select(conversations).where(conversations.c.id == id))).mappings().first()
            if row is None:
                raise NotFound(f"conversation '{id}' does not exist")
        return _conversation(row)

    async def delete_conversation(self, id: str) -> list[str]:
        """Deletes the conversation with its messages, allowances and file links; returns the
        linked file ids so that the caller can delete the files. Unknown ids delete nothing."""
        async with self._write("delete the conversation") as conn:
            file_ids = (
                (await conn.execute(select(files.c.file_id).where(files.c.conversation_id == id))).scalars().all()
            )
            await conn.execute(delete(conversations).where(conversations.c.id == id))
        return sorted(file_ids)

    # -- messages -----------------------------------------------------------------------------

    async def add_message(
        self,
        conversation_id: str,
        *,
        id: str,
        parent_id: str | None,
        role: str,
        content: str,
        data: Mapping[str, Any] | None = None,
    ) -> Message:
        """Appends a message and makes it the conversation's leaf, in one transaction.

        The conversation row is updated first: its row lock (Postgres) or the write lock (SQLite)
        makes concurrent writers take turns, so each reads the highest seq after the other's commit."""
        if role not in ROLES:
            raise BadRequest(f"a message's role is one of {sorted(ROLES)}, not '{role}'")
        now = _now()
        async with self._write("save the message") as conn:
            bumped = await conn.execute(
                update(conversations)
                .where(conversations.c.id == conversation_id)
                .values(leaf_id=id, updated_at=now, message_count=conversations.c.message_count + 1)
                .returning(conversations.c.id)
            )
            if bumped.first() is None:
                raise NotFound(f"conversation '{conversation_id}' does not exist")
            if parent_id is not None:
                parent = await conn.execute(
                    select(messages.c.id).where(
                        messages.c.id == parent_id, messages.c.conversation_id == conversation_id
                    )
                )
                if parent.first() is None:
                    raise BadRequest(f"message '{parent_id}' is not in conversation '{conversation_id}'")
            if (await conn.execute(select(messages.c.id).where(messages.c.id == id))).first() is not None:
                raise Conflict(f"a message with id '{id}' exists already")
            last = select(func.coalesce(func.max(messages.c.seq), 0)).where(
                messages.c.conversation_id == conversation_id
            )
            seq = int((await conn.execute(last)).scalar_one()) + 1
            record = Message(id, conversation_id, parent_id, seq, role, content, dict(data or {}), now)  # type: ignore[arg-type]
            await conn.execute(
                insert(messages).values(
                    id=id,
                    conversation_id=conversation_id,
                    parent_id=parent_id,
                    seq=seq,
                    role=role,
                    content=content,
                    data=record.data,
                    created_at=now,
                )
            )
        return record

    async def messages(self, conversation_id: str) -> list[Message]:
        """Every message of every branch, in the order written."""
        stmt = select(messages).where(messages.c.conversation_id == conversation_id).order_by(messages.c.seq)
        async with self._read("read the conversation's messages") as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [_message(row) for row in rows]

    # -- allowances and files -----------------------------------------------------------------

    async def _link(self, table: Any, doing: str, conversation_id: str, **values: Any) -> None:
        async with self._write(doing) as conn:
            try:
                await conn.execute(self._insert_ignoring_duplicates(table, conversation_id=conversation_id, **values))
            except IntegrityError as exc:  # only the foreign key can fail: duplicates are ignored
                raise NotFound(f"conversation '{conversation_id}' does not exist") from exc

    async def add_allowance(self, conversation_id: str, key: str) -> None:
        await self._link(allowances, "save the allowance", conversation_id, key=key)

    async def allowances(self, conversation_id: str) -> set[str]:
        stmt = select(allowances.c.key).where(allowances.c.conversation_id == conversation_id)
        async with self._read("read the conversation's allowances") as conn:
            return set((await conn.execute(stmt)).scalars().all())

    async def link_file(self, conversation_id: str, file_id: str) -> None:
        await self._link(files, "link the file to the conversation", conversation_id, file_id=file_id)

    async def files(self, conversation_id: str) -> list[str]:
        stmt = select(files.c.file_id).where(files.c.conversation_id == conversation_id).order_by(files.c.file_id)
        async with self._read("read the conversation's files") as conn:
            return list((await conn.execute(stmt)).scalars().all())

    # -- tool pins ----------------------------------------------------------------------------

    async def pins(self) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
        async with self._read("read the tool pins") as conn:
            rows = (await conn.execute(select(tool_pins))).mappings().all()
        return {(r["server"], r["tool"]): (r["digest"], dict(r["definition"])) for r in rows}

    async def pin_if_absent(self, server: str, tool: str, digest: str, definition: Mapping[str, Any]) -> str:
        """Pins the definition unless one is pinned already; returns the digest pinned (the first
        writer's, across processes)."""
        async with self._write("pin the tool") as conn:
            await conn.execute(
                self._insert_ignoring_duplicates(
                    tool_pins, server=server, tool=tool, digest=digest, definition=dict(definition), pinned_at=_now()
                )
            )
            stored = select(tool_pins.c.digest).where(tool_pins.c.server == server, tool_pins.c.tool == tool)
            return str((await conn.execute(stored)).scalar_one())

    async def replace_pin(self, server: str, tool: str, digest: str, definition: Mapping[str, Any]) -> None:
        values = {"digest": digest, "definition": dict(definition), "pinned_at": _now()}
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        stmt = dialect_insert(tool_pins).values(server=server, tool=tool, **values)
        stmt = stmt.on_conflict_do_update(index_elements=[tool_pins.c.server, tool_pins.c.tool], set_=values)
        async with self._write("re-pin the tool") as conn:
            await conn.execute(stmt)
