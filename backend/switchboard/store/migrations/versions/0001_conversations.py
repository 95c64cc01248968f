"""Conversations, messages, allowances, file links, tool pins; search indexes per backend.

Revision ID: 0001
Revises: (none)
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _utc() -> sa.DateTime:
    return sa.DateTime(timezone=True)


# SQLite: FTS5 with the trigram tokenizer (case-insensitive substring matches) over message text
# and titles, as external-content tables kept in step by triggers.
_SQLITE_FTS = [
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='rowid', tokenize='trigram')",
    """CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
         INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content);
       END""",
    """CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
         INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
       END""",
    """CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
         INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
         INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content);
       END""",
    "CREATE VIRTUAL TABLE conversations_fts USING fts5(title, content='conversations', content_rowid='rowid', tokenize='trigram')",
    """CREATE TRIGGER conversations_fts_ai AFTER INSERT ON conversations BEGIN
         INSERT INTO conversations_fts(rowid, title) VALUES (new.rowid, new.title);
       END""",
    """CREATE TRIGGER conversations_fts_ad AFTER DELETE ON conversations BEGIN
         INSERT INTO conversations_fts(conversations_fts, rowid, title) VALUES ('delete', old.rowid, old.title);
       END""",
    """CREATE TRIGGER conversations_fts_au AFTER UPDATE OF title ON conversations BEGIN
         INSERT INTO conversations_fts(conversations_fts, rowid, title) VALUES ('delete', old.rowid, old.title);
         INSERT INTO conversations_fts(rowid, title) VALUES (new.rowid, new.title);
       END""",
]

# Postgres: trigram GIN indexes (pg_trgm, a trusted extension in contrib) serve ILIKE '%q%'.
_POSTGRES_SEARCH = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_messages_content_trgm ON messages USING gin (content gin_trgm_ops)",
    "CREATE INDEX ix_conversations_title_trgm ON conversations USING gin (title gin_trgm_ops)",
]


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("owner", sa.String(320), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("model", sa.String(200)),
        sa.Column("compliance_level", sa.String(200)),
        sa.Column("levels_used", _json(), nullable=False),
        sa.Column("leaf_id", sa.String(64)),
        sa.Column("message_count", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", _utc(), nullable=False),
        sa.Column("updated_at", _utc(), nullable=False),
    )
    op.create_index("ix_conversations_owner", "conversations", ["owner"])
    op.create_index("ix_conversations_owner_updated_at", "conversations", ["owner", "updated_at"])
    op.create_table(
        "messages",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column(
            "conversation_id", sa.String(64), sa.ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("parent_id", sa.String(64)),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("data", _json(), nullable=False),
        sa.Column("created_at", _utc(), nullable=False),
        sa.CheckConstraint("role IN ('user', 'assistant', 'tool')", name="ck_messages_role"),
    )
    op.create_index("ux_messages_conversation_seq", "messages", ["conversation_id", "seq"], unique=True)
    op.create_table(
        "conversation_allowances",
        sa.Column(
            "conversation_id", sa.String(64), sa.ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("key", sa.String(500), primary_key=True),
    )
    op.create_table(
        "conversation_files",
        sa.Column(
            "conversation_id", sa.String(64), sa.ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("file_id", sa.String(200), primary_key=True),
    )
    op.create_table(
        "tool_pins",
        sa.Column("server", sa.String(200), primary_key=True),
        sa.Column("tool", sa.String(500), primary_key=True),
        sa.Column("digest", sa.String(128), nullable=False),
        sa.Column("definition", _json(), nullable=False),
        sa.Column("pinned_at", _utc(), nullable=False),
    )
    dialect = op.get_bind().dialect.name
    for statement in _SQLITE_FTS if dialect == "sqlite" else _POSTGRES_SEARCH if dialect == "postgresql" else []:
        op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute("DROP TABLE IF EXISTS messages_fts")
        op.execute("DROP TABLE IF EXISTS conversations_fts")
    for table in ("tool_pins", "conversation_files", "conversation_allowances", "messages", "conversations"):
        op.drop_table(table)
