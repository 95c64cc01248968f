"""`app_processes.presence`: what each process holds for each user (open pages, servers connected
with the user's own account), so the admin console's Users tab counts every process, not only the
one that answers.

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("app_processes", sa.Column("presence", sa.JSON().with_variant(JSONB(), "postgresql"), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("app_processes") as batch:
        batch.drop_column("presence")
