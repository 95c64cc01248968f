"""`server_shares`: users' requests to share their own servers, waiting for an administrator; and
`console_servers.source` long enough for `user:<email>` (16 characters refused it on PostgreSQL).

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("console_servers") as batch:
        batch.alter_column("source", type_=sa.String(330), existing_type=sa.String(16), existing_nullable=False)
    op.create_table(
        "server_shares",
        sa.Column("server", sa.String(200), primary_key=True),
        sa.Column("owner", sa.String(320), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("note", sa.String(500)),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_by", sa.String(320)),
        sa.Column("decided_at", sa.DateTime(timezone=True)),
        sa.Column("reason", sa.String(500)),
        sa.CheckConstraint("state IN ('pending', 'declined')", name="ck_server_shares_state"),
    )


def downgrade() -> None:
    op.drop_table("server_shares")
    with op.batch_alter_table("console_servers") as batch:
        batch.alter_column("source", type_=sa.String(16), existing_type=sa.String(330), existing_nullable=False)
