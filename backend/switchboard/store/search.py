"""The search condition behind ``list_conversations(q=...)``: a case-insensitive substring of a
conversation's title or of any of its messages' text (every branch).

SQLite answers from the FTS5 trigram tables; Postgres from ``ILIKE`` served by trigram GIN
indexes (pg_trgm).  Both match substrings, so the two backends give the same results.  A trigram
index needs three characters: a query of one or two characters is answered without it, from
titles and from the messages of the owner's SHORT_QUERY_CONVERSATIONS most recently updated
conversations (a scan of every message for two letters nobody wrote took over a second at
100,000 messages; docs/benchmarks.md).

On SQLite the index takes new rows in batches (migration 0009): rows above the mark in
``fts_indexed`` are added by ``catch_up``, which the store runs before a search that uses the index
and, in a turn's write, every INDEX_EVERY messages. A search thus finds every committed row, and a
turn's transactions write no index pages (FTS5 writes a segment per transaction).

Two plans: when few messages match, their conversations are collected once; when many do
(``common_in_messages`` counts up to COMMON_MATCHES), conversations are tested newest first
and the page ends early."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    TextClause,
    column,
    exists,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
    text,
)

from .models import conversations, messages
from .prepared import Statements

__all__ = [
    "COMMON_MATCHES",
    "INDEX_EVERY",
    "SHORTEST_TEXT_QUERY",
    "SHORT_QUERY_CONVERSATIONS",
    "catch_up",
    "common_in_messages",
    "matches",
    "uses_index",
]

SHORTEST_TEXT_QUERY = 3  # characters: what a trigram index can serve
SHORT_QUERY_CONVERSATIONS = 200  # a shorter query reads the messages of this many newest conversations
COMMON_MATCHES = 500  # from this many matching messages on, walk conversations newest first

INDEX_EVERY = 256  # SQLite: a turn's write indexes the rows waiting once this process wrote this many messages

_messages_fts = table("messages_fts", column("rowid"))
_titles_fts = table("conversations_fts", column("rowid"))


def _like_pattern(q: str) -> str:
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _by_scan(q: str, owner: str) -> ColumnElement[bool]:
    """Short queries: the title, or a message of one of the owner's most recent conversations."""
    pattern = _like_pattern(q)
    recent = conversations.alias("recent")
    newest = (
        select(recent.c.id)
        .where(recent.c.owner == owner)
        .order_by(recent.c.updated_at.desc())
        .limit(SHORT_QUERY_CONVERSATIONS)
    )
    in_messages = select(messages.c.conversation_id).where(
        messages.c.conversation_id.in_(newest), messages.c.content.ilike(pattern, escape="\\")
    )
    return or_(conversations.c.title.ilike(pattern, escape="\\"), conversations.c.id.in_(in_messages))


def _by_trigram_index(q: str, common: bool) -> ColumnElement[bool]:
    pattern = _like_pattern(q)
    in_title = conversations.c.title.ilike(pattern, escape="\\")
    if common:
        # Many messages match: test conversations newest first and stop at the end of the page.
        # (A correlated LIMIT 1 subquery: Postgres would turn EXISTS or IN into a hash of every match.)
        first = (
            select(literal(True))
            .where(messages.c.conversation_id == conversations.c.id, messages.c.content.ilike(pattern, escape="\\"))
            .limit(1)
            .scalar_subquery()
        )
        return or_(in_title, first)
    in_messages = select(messages.c.conversation_id).where(messages.c.content.ilike(pattern, escape="\\"))
    return or_(in_title, conversations.c.id.in_(in_messages))


def _phrase(q: str) -> str:
    return '"' + q.replace('"', '""') + '"'  # one quoted FTS5 string: no query syntax gets through


def _message_rows(q: str) -> Select[Any]:
    return select(_messages_fts.c.rowid).where(text("messages_fts MATCH :fts_q").bindparams(fts_q=_phrase(q)))


def common_in_messages(q: str, dialect: str) -> Select[Any]:
    """Counts matching messages up to COMMON_MATCHES (an index look-up); at that count the query
    is "common" and ``matches`` should be called with ``common=True``."""
    if dialect == "sqlite":
        rows = _message_rows(q)
    else:
        rows = select(messages.c.id).where(messages.c.content.ilike(_like_pattern(q), escape="\\"))
    return select(func.count()).select_from(rows.limit(COMMON_MATCHES).subquery())


def _by_fts5(q: str, common: bool) -> ColumnElement[bool]:
    message_rows = _message_rows(q)
    if common:
        # Many messages match: walk the conversations newest first and stop at the end of the page.
        in_messages: ColumnElement[bool] = exists().where(
            messages.c.conversation_id == conversations.c.id, literal_column("messages.rowid").in_(message_rows)
        )
    else:
        # Few match: collect their conversations once.
        owners = select(messages.c.conversation_id).where(literal_column("messages.rowid").in_(message_rows))
        in_messages = conversations.c.id.in_(owners)
    title_rows = select(_titles_fts.c.rowid).where(text("conversations_fts MATCH :fts_t").bindparams(fts_t=_phrase(q)))
    return or_(literal_column("conversations.rowid").in_(title_rows), in_messages)


def matches(q: str, dialect: str, *, owner: str, common: bool = False) -> ColumnElement[bool]:
    """``common`` (from ``common_in_messages``) picks the plan that suits many matches."""
    if len(q) < SHORTEST_TEXT_QUERY:
        return _by_scan(q, owner)
    return _by_fts5(q, common) if dialect == "sqlite" else _by_trigram_index(q, common)


def _catch_up(source: str, index: str, column_name: str) -> tuple[TextClause, TextClause]:
    mark = f"(SELECT up_to FROM fts_indexed WHERE source = '{source}')"
    return (
        text(
            f"INSERT INTO {index}(rowid, {column_name}) SELECT rowid, {column_name} FROM {source} WHERE rowid > {mark}"
        ),
        text(
            f"UPDATE fts_indexed SET up_to = (SELECT max(rowid) FROM {source}) "
            f"WHERE source = '{source}' AND up_to < (SELECT max(rowid) FROM {source})"
        ),
    )


CATCH_UP = (
    *_catch_up("messages", "messages_fts", "content"),
    *_catch_up("conversations", "conversations_fts", "title"),
)


def catch_up(conn: Statements) -> None:
    """SQLite, in a write transaction: add the rows waiting to the search index."""
    for statement in CATCH_UP:
        conn.execute(statement, {})


def uses_index(q: str, dialect: str) -> bool:
    """Whether the search for ``q`` reads SQLite's index (and so needs ``catch_up`` first)."""
    return dialect == "sqlite" and len(q) >= SHORTEST_TEXT_QUERY
