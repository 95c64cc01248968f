"""Owners under one spelling: every column that names a user is stripped and lower-cased.

The app works out a user's address once, stripped and lower-cased (`auth.normalize_email`);
rows stored before that under `Alice@Example.com ` were owned by a spelling no request carries
any more. Where two spellings of one user hold a row under the same key (a credential for the
same server and kind, a pending sign-in for the same server), the newest row is kept and the
older ones are deleted. A conversation id a client picked is stored under a hash of the owner's
spelling and the name, which cannot be worked out again for the new spelling: the old spellings
of such owners go to `owner_spellings`, where the app looks for them. The values are worked out in Python (not SQL `lower()`, which on SQLite
folds ASCII only), so they match what the app computes.

Revision ID: 0007
Revises: 0006
"""

import re
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# (table, the column naming the user); tables whose key does not include the user
_OWNED = (("conversations", "owner"), ("api_tokens", "owner"), ("tasks", "owner"), ("live_turns", "owner"))
_PICKED = re.compile(r"^u[A-Za-z0-9_-]{24}$")  # the shape of named conversations' ids (chat/conversation_ids.py)


def _normalize(address: str) -> str:  # the same rule as auth.normalize_email, frozen here
    return address.strip().lower()


def upgrade() -> None:
    bind = op.get_bind()
    spellings = op.create_table(
        "owner_spellings",
        sa.Column("owner", sa.String(320), primary_key=True),
        sa.Column("spelling", sa.String(320), primary_key=True),
    )
    picked = sa.table("conversations", sa.column("owner"), sa.column("id"))
    for old in _spellings(bind, "conversations", "owner"):
        ids = bind.execute(sa.select(picked.c.id).where(picked.c.owner == old)).scalars().all()
        if any(_PICKED.match(i) for i in ids):
            bind.execute(sa.insert(spellings).values(owner=_normalize(old), spelling=old))
    _keep_newest(bind, "user_credentials", key=("server", "kind"), newest="updated_at")
    _keep_newest(bind, "oauth_pending", key=("server",), newest="created_at")
    for table, column in (*_OWNED, ("user_credentials", "user"), ("oauth_pending", "user")):
        _rename(bind, table, column)


def downgrade() -> None:
    op.drop_table("owner_spellings")  # the owners keep their normalized spelling


def _spellings(bind: sa.Connection, table: str, column: str) -> list[str]:
    t = sa.table(table, sa.column(column))
    rows = bind.execute(sa.select(t.c[column]).distinct()).scalars().all()
    return [r for r in rows if r is not None and _normalize(r) != r]


def _rename(bind: sa.Connection, table: str, column: str) -> None:
    t = sa.table(table, sa.column(column))
    for old in _spellings(bind, table, column):
        bind.execute(sa.update(t).where(t.c[column] == old).values({column: _normalize(old)}))


def _keep_newest(bind: sa.Connection, table: str, *, key: tuple[str, ...], newest: str) -> None:
    """Rows of `table` that would share (key..., user) once the user is normalized: keep the one
    with the newest `newest` (on a tie, the one already spelled right), delete the others."""
    if not _spellings(bind, table, "user"):
        return
    t = sa.table(table, sa.column("user"), sa.column(newest), *(sa.column(k) for k in key))
    rows = bind.execute(sa.select(t.c.user, t.c[newest], *(t.c[k] for k in key))).all()
    groups: dict[tuple[str, ...], list[sa.Row]] = {}
    for row in rows:
        groups.setdefault((_normalize(row.user), *(row._mapping[k] for k in key)), []).append(row)

    def order(row: sa.Row) -> tuple[Any, bool]:
        return row._mapping[newest], row.user == _normalize(row.user)

    for group in groups.values():
        for row in sorted(group, key=order)[:-1]:
            bind.execute(sa.delete(t).where(t.c.user == row.user, *(t.c[k] == row._mapping[k] for k in key)))
