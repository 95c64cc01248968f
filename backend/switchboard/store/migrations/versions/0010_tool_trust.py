"""Tool trust: an administrator's decision per tool (approved with its pin, or blocked).

The tools pinned so far (`tool_pins`, one row per tool the host had seen) become approved rows whose
pin is `legacy:<digest>`: the same definition stays approved (and is re-pinned with the full pin
the first time it is seen), a different one waits for an administrator. The app resources' pins
(`TOOL#ui` rows) stay in `tool_pins`.

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_trust",
        sa.Column("server", sa.String(200), primary_key=True),
        sa.Column("tool", sa.String(500), primary_key=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("pin", sa.String(80)),
        sa.Column("definition", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("decided_by", sa.String(320)),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("state IN ('approved', 'blocked')", name="ck_tool_trust_state"),
    )
    op.execute(
        "INSERT INTO tool_trust (server, tool, state, pin, definition, version, decided_by, decided_at) "
        "SELECT server, tool, 'approved', 'legacy:' || digest, definition, 1, NULL, pinned_at "
        "FROM tool_pins WHERE tool NOT LIKE '%#ui'"
    )
    op.execute("DELETE FROM tool_pins WHERE tool NOT LIKE '%#ui'")


def downgrade() -> None:
    op.execute(
        "INSERT INTO tool_pins (server, tool, digest, definition, pinned_at) "
        "SELECT server, tool, substr(pin, 8), definition, decided_at FROM tool_trust "
        "WHERE state = 'approved' AND pin LIKE 'legacy:%'"
    )
    op.drop_table("tool_trust")
