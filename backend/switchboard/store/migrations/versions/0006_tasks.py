"""Tasks: tool calls a server runs in the background (MCP extension io.modelcontextprotocol/tasks).

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("task_id", sa.String(500), nullable=False),
        sa.Column("owner", sa.String(320), nullable=False),
        sa.Column("conversation_id", sa.String(64), nullable=False),
        sa.Column("server", sa.String(200), nullable=False),
        sa.Column("tool", sa.String(500), nullable=False),
        sa.Column("call_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("progress", sa.Float),
        sa.Column("message", sa.Text),
        sa.Column("result", sa.JSON().with_variant(JSONB(), "postgresql")),
        sa.Column("poll_interval_ms", sa.Integer),
        sa.Column("lease_owner", sa.String(64)),
        sa.Column("lease_until", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_tasks_conversation_id", "tasks", ["conversation_id"])
    op.create_index("ix_tasks_owner_created_at", "tasks", ["owner", "created_at"])
    op.create_index("ix_tasks_status", "tasks", ["status"])


def downgrade() -> None:
    op.drop_table("tasks")
