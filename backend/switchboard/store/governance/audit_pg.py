"""The audit log's append on PostgreSQL as one statement: `audit_append(...)` (migration 0012)
takes the chain's advisory lock, checks that the chain still ends at the seq and hash the batch
was sealed after, and inserts the batch, one array per column. It runs on the asyncpg connection
itself (``pg_driver``), prepared once, in autocommit: the statement is its own transaction, so the
lock is held only while it runs, and the append is one round trip instead of five (BEGIN, the lock,
the tail, the insert, COMMIT through SQLAlchemy).

The records are sealed in the app by the one `seal` (the same canonical bytes and hashes as every
other append); the database only stores them. If the chain moved on meanwhile (another process
appended), the function inserts nothing and returns false, and the caller appends the usual way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, Boolean, Text, bindparam, func, select
from sqlalchemy.dialects.postgresql import ARRAY

from ...audit.chain import Sealed

__all__ = ["APPEND", "append_values"]

_TEXTS = ARRAY(Text)
_ARRAYS = ("tss", "kinds", "users", "servers", "tools", "decisions", "hashes", "bodies")
APPEND = select(
    func.audit_append(
        bindparam("lock_key", type_=BigInteger),
        bindparam("after_seq", type_=BigInteger),
        bindparam("after_hash", type_=Text),
        *(bindparam(name, type_=_TEXTS) for name in _ARRAYS),
        type_=Boolean,
    )
)


def append_values(lock_key: int, after_seq: int, after_hash: str, records: Sequence[Sealed]) -> dict[str, Any]:
    """The parameters of `APPEND` for `records`, sealed from `after_seq` and `after_hash` on."""
    fields = [r.fields for r in records]
    return {
        "lock_key": lock_key,
        "after_seq": after_seq,
        "after_hash": after_hash,
        "tss": [r.ts for r in records],
        "kinds": [f["kind"] for f in fields],
        "users": [f.get("user") for f in fields],
        "servers": [f.get("server") for f in fields],
        "tools": [f.get("tool") for f in fields],
        "decisions": [f.get("decision") for f in fields],
        "hashes": [r.hash for r in records],
        "bodies": [r.body for r in records],
    }
