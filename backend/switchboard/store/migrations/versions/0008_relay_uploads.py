"""The relay's event buffer is UNLOGGED (Postgres), and uploads are counted in the store.

`turn_events` holds a followed turn's events while it runs (cleared at the next turn's start): a
relay buffer, not a record. UNLOGGED, its inserts write no WAL, so the statement that sends a batch
of events to other processes commits without waiting for a disk flush. After a Postgres crash the
table is empty, as the turns it served have ended anyway.

`uploads`: one row per stored upload (its id, owner, size), so that every app process checks a
user's upload quota against the same count.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE turn_events SET UNLOGGED")
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(320), nullable=False, index=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("uploads")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE turn_events SET LOGGED")
