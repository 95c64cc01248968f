"""The search condition behind ``list_conversations(q=...)``: a case-insensitive substring of a
conversation's title or of any of its messages' text (every branch).

SQLite answers from the FTS5 trigram tables; Postgres from ``ILIKE`` served by trigram GIN
indexes (pg_trgm).  Both match substrings, so the two backends give the same results.  A trigram
index needs three characters: shorter queries are answered by a scan (fast enough for short
words at the sizes we measured, see docs/benchmarks.md)."""

from __future__ import annotations

from sqlalchemy import ColumnElement, column, literal_column, or_, select, table, text

from .models import conversations, messages

__all__ = ["matches"]

_messages_fts = table("messages_fts", column("rowid"))
_titles_fts = table("conversations_fts", column("rowid"))


def _like_pattern(q: str) -> str:
    escaped = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _by_scan(q: str) -> ColumnElement[bool]:
    pattern = _like_pattern(q)
    in_messages = select(messages.c.conversation_id).where(messages.c.content.ilike(pattern, escape="\\"))
    return or_(conversations.c.title.ilike(pattern, escape="\\"), conversations.c.id.in_(in_messages))


def _by_fts5(q: str) -> ColumnElement[bool]:
    phrase = '"' + q.replace('"', '""') + '"'  # one quoted FTS5 string: no query syntax gets through
    message_rows = (
        select(_messages_fts.c.rowid).where(text("messages_fts MATCH :fts_q").bindparams(fts_q=phrase))
    )
    in_messages = select(messages.c.conversation_id).where(literal_column("messages.rowid").in_(message_rows))
    title_rows = (
        select(_titles_fts.c.rowid).where(text("conversations_fts MATCH :fts_t").bindparams(fts_t=phrase))
    )
    return or_(literal_column("conversations.rowid").in_(title_rows), conversations.c.id.in_(in_messages))


def matches(q: str, dialect: str) -> ColumnElement[bool]:
    if dialect == "sqlite" and len(q) >= 3:
        return _by_fts5(q)
    return _by_scan(q)
