"""`conversations.data_version`: moves when a stored message changes in place (an MCP App's data on
its tool message). Messages are otherwise only added, so a process that keeps a conversation's
prepared context reads only the messages written since, and reads it all again when this moved.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("conversations", sa.Column("data_version", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("data_version")
