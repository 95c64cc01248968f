"""The admin console: the servers it added or switched on and off, and the users seen.

Revision ID: 0011
Revises: 0010
"""

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def _json() -> Any:
    return sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "console_servers",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("entry", _json()),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("trust", sa.String(16)),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("updated_by", sa.String(320), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "users_seen",
        sa.Column("email", sa.String(320), primary_key=True),
        sa.Column("groups", _json(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("users_seen")
    op.drop_table("console_servers")
