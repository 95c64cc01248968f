"""The conversation store: conversations, their message trees, allowances, file links, tool pins.

Every write is one transaction, committed when the method returns, so the caller may announce
what it wrote. Database errors are translated in ``_base.py``; ids that are taken or missing are
``Conflict`` and ``NotFound``.

Each method's work is a plain function of a connection, run by ``read``/``transaction``
(``_base.py``); the statements of the frequent calls are built once (``statements.py``). What a
turn writes is in ``turn_writes.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError

from ..errors import Conflict, NotFound, StoreUnavailable, SwitchboardError
from . import statements as S
from .app_calls import AppCallQueries
from .engine import make_engine, unavailable
from .migrate import migrate as run_migrations
from .models import allowances, conversations, files, tool_pins
from .pages import PagedReads
from .prepared import Statements
from .records import Conversation, Message, StoredConversation
from .rows import conversation_of as _conversation
from .rows import message_of as _message
from .search import COMMON_MATCHES, SHORTEST_TEXT_QUERY, catch_up, common_in_messages, matches, uses_index
from .spellings import OwnerSpellings
from .turn_writes import UNSET, NewConversation, TurnWrites, _Unset, now_utc

__all__ = ["UNSET", "ConversationStore", "down_store", "open_store"]


_now = now_utc


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


def down_store(url: str, error: SwitchboardError) -> ConversationStore:
    """The store as it is when it could not be opened: every call raises why (``StoreUnavailable``)."""
    down = error if isinstance(error, StoreUnavailable) else StoreUnavailable(error.message, action=error.action)
    return ConversationStore(None, url, down=down)


class ConversationStore(TurnWrites, PagedReads, AppCallQueries, OwnerSpellings):
    def __init__(self, engine: Any, url: str, *, down: StoreUnavailable | None = None) -> None:
        super().__init__(engine, url, down=down)
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        self._link_file = dialect_insert(files).on_conflict_do_nothing()
        self._link_allowance = dialect_insert(allowances).on_conflict_do_nothing()

    # -- conversations ------------------------------------------------------------------------

    async def create_conversation(
        self,
        *,
        id: str,
        owner: str,
        title: str,
        model: str | None,
        compliance_level: str | None,
        levels_used: Sequence[str | None] | None = None,
    ) -> Conversation:
        """``levels_used`` defaults to ``[compliance_level]``."""
        row = NewConversation(owner, title, model, compliance_level, levels_used).row(id, _now())

        def work(conn: Connection) -> None:
            try:
                conn.execute(S.INSERT_CONVERSATION, row)
            except IntegrityError as exc:
                raise Conflict(f"a conversation with id '{id}' exists already; pick another id") from exc

        await self.transaction("save the new conversation", work, single=True)
        return _conversation(row)

    async def get_conversation(self, id: str) -> Conversation | None:
        def work(conn: Connection) -> Conversation | None:
            row = conn.execute(S.CONVERSATION, {"cid": id}).mappings().first()
            return _conversation(row) if row else None

        return await self.read("read the conversation", work)

    async def load(self, id: str, *others: str, after: Mapping[str, int] | None = None) -> StoredConversation | None:
        """The conversation with its messages (every branch, in order), allowances and file links
        (on SQLite from one snapshot; on Postgres, at its READ COMMITTED, each statement sees its
        own); None when it is not stored. ``others``: ids to try in turn when ``id`` is not stored
        (in the same call: one call for a name that may be stored two ways). ``after``: per id, the
        highest seq the caller holds: only the messages after it are read."""

        def work(conn: Statements) -> StoredConversation | None:
            if len(others) == 1:  # the usual pair (as given, as scoped): both looked up at once
                found = {
                    r["id"]: r for r in conn.execute(S.CONVERSATION_OF_TWO, {"cid": id, "cid2": others[0]}).mappings()
                }
                row = found.get(id) or found.get(others[0])
            else:
                row = None
                for candidate in (id, *others):
                    row = conn.execute(S.CONVERSATION, {"cid": candidate}).mappings().first()
                    if row is not None:
                        break
            if row is None:
                return None
            cid = row["id"]
            params = {"cid": cid}
            held = after.get(cid, 0) if after else 0
            reading = (
                conn.execute(S.MESSAGES_AFTER, {"cid": cid, "after": held})
                if held
                else conn.execute(S.MESSAGES, params)
            )
            return StoredConversation(
                conversation=_conversation(row),
                messages=[_message(m) for m in reading.mappings()],
                allowances=set(conn.execute(S.ALLOWANCES, params).scalars()),
                files=list(conn.execute(S.FILES, params).scalars()),
            )

        # on a SQLite file, on the sqlite3 connection (prepared.py): every new conversation's turn
        # starts with this look-up, and SQLAlchemy's handling of it cost more than SQLite's work
        return await self.read_prepared("read the conversation", work)

    async def list_conversations(
        self, owner: str, *, q: str | None = None, limit: int = 50, before: datetime | None = None
    ) -> list[Conversation]:
        """Newest ``updated_at`` first. ``q``: case-insensitive substring of the title or of any
        message's text (shorter than 3 characters: of the messages of the owner's 200 most
        recently updated conversations; store/search.py). ``before``: only
        conversations updated strictly earlier (the next page)."""
        stmt = select(conversations).where(conversations.c.owner == owner)
        if before is not None and before.tzinfo is None:
            raise ValueError("`before` must be timezone-aware (the store keeps UTC)")
        if before is not None:
            stmt = stmt.where(conversations.c.updated_at < before)
        q = (q or "").strip()
        if "\x00" in q:
            return []  # no stored text holds NUL (Postgres refuses it; FTS5 ends the phrase there)

        if q and uses_index(q, self._dialect):
            # rows written since the index last took new ones are added first (search.py)
            await self.transaction("update the search index", catch_up)
            self._unindexed = 0

        def work(conn: Connection) -> list[Conversation]:
            query = stmt
            if q:
                common = False
                if len(q) >= SHORTEST_TEXT_QUERY:
                    probe = common_in_messages(q, self._dialect)
                    common = conn.execute(probe).scalar_one() >= COMMON_MATCHES
                query = query.where(matches(q, self._dialect, owner=owner, common=common))
            query = query.order_by(conversations.c.updated_at.desc(), conversations.c.id.desc()).limit(max(0, limit))
            return [_conversation(row) for row in conn.execute(query).mappings()]

        return await self.read("list conversations", work)

    async def update_conversation(
        self,
        id: str,
        *,
        title: str | _Unset = UNSET,
        model: str | _Unset | None = UNSET,
        compliance_level: str | _Unset | None = UNSET,
        levels_used: Sequence[str | None] | _Unset = UNSET,
        leaf_id: str | _Unset | None = UNSET,
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

        def work(conn: Connection) -> Conversation:
            if changes:
                stmt = update(conversations).where(conversations.c.id == id).values(**changes)
                row = conn.execute(stmt.returning(*conversations.c)).mappings().first()
            else:
                row = conn.execute(S.CONVERSATION, {"cid": id}).mappings().first()
            if row is None:
                raise NotFound(f"conversation '{id}' does not exist")
            return _conversation(row)

        return await self.transaction("save the conversation's changes", work, single=True)

    async def delete_conversation(self, id: str) -> list[str]:
        """Deletes the conversation with its messages, allowances and file links; returns the
        linked file ids so that the caller can delete the files. Unknown ids delete nothing."""

        def work(conn: Connection) -> list[str]:
            file_ids = list(conn.execute(S.FILES, {"cid": id}).scalars())
            conn.execute(delete(conversations).where(conversations.c.id == id))
            return file_ids

        return sorted(await self.transaction("delete the conversation", work))

    # -- messages -----------------------------------------------------------------------------

    async def messages(self, conversation_id: str) -> list[Message]:
        """Every message of every branch, in the order written."""

        def work(conn: Connection) -> list[Message]:
            return [_message(row) for row in conn.execute(S.MESSAGES, {"cid": conversation_id}).mappings()]

        return await self.read("read the conversation's messages", work)

    # -- allowances and files -----------------------------------------------------------------

    async def _link(self, stmt: Any, doing: str, conversation_id: str, **values: Any) -> None:
        def work(conn: Connection) -> None:
            try:
                conn.execute(stmt, {"conversation_id": conversation_id, **values})
            except IntegrityError as exc:  # only the foreign key can fail: duplicates are ignored
                raise NotFound(f"conversation '{conversation_id}' does not exist") from exc

        await self.transaction(doing, work, single=True)

    async def add_allowance(self, conversation_id: str, key: str) -> None:
        await self._link(self._link_allowance, "save the allowance", conversation_id, key=key)

    async def allowances(self, conversation_id: str) -> set[str]:
        def work(conn: Connection) -> set[str]:
            return set(conn.execute(S.ALLOWANCES, {"cid": conversation_id}).scalars())

        return await self.read("read the conversation's allowances", work)

    async def link_file(self, conversation_id: str, file_id: str) -> None:
        await self._link(self._link_file, "link the file to the conversation", conversation_id, file_id=file_id)

    async def files(self, conversation_id: str) -> list[str]:
        def work(conn: Connection) -> list[str]:
            return list(conn.execute(S.FILES, {"cid": conversation_id}).scalars())

        return await self.read("read the conversation's files", work)

    # -- tool pins ----------------------------------------------------------------------------

    async def pins(self) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
        def work(conn: Connection) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
            rows = conn.execute(select(tool_pins)).mappings()
            return {(r["server"], r["tool"]): (r["digest"], dict(r["definition"])) for r in rows}

        return await self.read("read the tool pins", work)

    async def pin_if_absent(self, server: str, tool: str, digest: str, definition: Mapping[str, Any]) -> str:
        """Pins the definition unless one is pinned already; returns the digest pinned (the first
        writer's, across processes)."""
        insert_stmt = self.insert_ignoring_duplicates(
            tool_pins, server=server, tool=tool, digest=digest, definition=dict(definition), pinned_at=_now()
        )
        stored = select(tool_pins.c.digest).where(tool_pins.c.server == server, tool_pins.c.tool == tool)

        def work(conn: Connection) -> str:
            conn.execute(insert_stmt)
            return str(conn.execute(stored).scalar_one())

        return await self.transaction("pin the tool", work)

    async def replace_pin(self, server: str, tool: str, digest: str, definition: Mapping[str, Any]) -> None:
        values = {"digest": digest, "definition": dict(definition), "pinned_at": _now()}
        dialect_insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        stmt = dialect_insert(tool_pins).values(server=server, tool=tool, **values)
        stmt = stmt.on_conflict_do_update(index_elements=[tool_pins.c.server, tool_pins.c.tool], set_=values)

        def work(conn: Connection) -> None:
            conn.execute(stmt)

        await self.transaction("re-pin the tool", work, single=True)
