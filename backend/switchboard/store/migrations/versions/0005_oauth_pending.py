"""Pending OAuth sign-ins, shared by every app process (encrypted values).

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_pending",
        sa.Column("state_hash", sa.String(64), primary_key=True),
        sa.Column("server", sa.String(200), nullable=False),
        sa.Column("user", sa.String(320), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_oauth_pending_server_user", "oauth_pending", ["server", "user"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_oauth_pending_server_user", "oauth_pending")
    op.drop_table("oauth_pending")
