"""Turns running across several app processes: live_turns, app_processes, turn_events.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_turns",
        sa.Column("conversation_id", sa.String(200), primary_key=True),
        sa.Column("owner", sa.String(320), nullable=False, index=True),
        sa.Column("process_id", sa.String(40), nullable=False, index=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "app_processes",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "turn_events",
        sa.Column("conversation_id", sa.String(200), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("body", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("turn_events")
    op.drop_table("app_processes")
    op.drop_table("live_turns")
