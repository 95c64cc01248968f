"""The store's tables (SQLAlchemy Core).  The migrations in ``migrations/versions`` create them;
a test checks that the two agree.

Search indexes are not described here because they differ by backend: SQLite gets FTS5 tables
(``messages_fts``, ``conversations_fts``) kept in step by triggers, Postgres gets trigram GIN
indexes (pg_trgm).  Both are created by the migrations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

__all__ = [
    "UTCDateTime",
    "allowances",
    "api_tokens",
    "app_processes",
    "audit_checkpoints",
    "audit_prunes",
    "audit_records",
    "console_servers",
    "conversations",
    "files",
    "live_turns",
    "messages",
    "metadata",
    "oauth_pending",
    "owner_spellings",
    "server_shares",
    "tasks",
    "tool_pins",
    "tool_trust",
    "turn_events",
    "uploads",
    "user_credentials",
    "users_seen",
]


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC on the way out for every backend.

    Postgres stores ``timestamptz``; SQLite has no time zones, so values are stored as naive UTC
    (a fixed-width text that sorts in time order) and marked UTC when read."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("the store takes timezone-aware datetimes only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _json() -> Any:
    return JSON().with_variant(JSONB(), "postgresql")


metadata = MetaData()

conversations = Table(
    "conversations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("owner", String(320), nullable=False),  # served by the index below (owner first)
    Column("title", Text, nullable=False),
    Column("model", String(200)),
    Column("compliance_level", String(200)),
    Column("levels_used", _json(), nullable=False),  # list; null entries mean "no level"
    Column("leaf_id", String(64)),
    Column("message_count", Integer, nullable=False, server_default="0"),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # moves when a stored message changes in place (an app's data): a process's prepared context of
    # the conversation (chat/prepared_contexts.py) is then read again (messages are otherwise only added)
    Column("data_version", Integer, nullable=False, server_default="0"),
    Index("ix_conversations_owner_updated_at", "owner", "updated_at"),
)

messages = Table(
    "messages",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("conversation_id", String(64), ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False),
    Column("parent_id", String(64)),
    Column("seq", Integer, nullable=False),
    Column("role", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("data", _json(), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    CheckConstraint("role IN ('user', 'assistant', 'tool')", name="ck_messages_role"),
    # ordering within a conversation, and the guard that two writers never share a seq
    Index("ux_messages_conversation_seq", "conversation_id", "seq", unique=True),
)

allowances = Table(
    "conversation_allowances",
    metadata,
    Column("conversation_id", String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True),
    Column("key", String(500), primary_key=True),
)

files = Table(
    "conversation_files",
    metadata,
    Column("conversation_id", String(64), ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True),
    Column("file_id", String(200), primary_key=True),
)

tool_pins = Table(
    "tool_pins",
    metadata,
    Column("server", String(200), primary_key=True),
    Column("tool", String(500), primary_key=True),
    Column("digest", String(128), nullable=False),
    Column("definition", _json(), nullable=False),
    Column("pinned_at", UTCDateTime, nullable=False),
)

# An administrator's decision on a tool (tools/trust.py): `approved` with the pin approved (a pin
# of an older version is `legacy:<digest>`), or `blocked`. No row: never approved (pending).
tool_trust = Table(
    "tool_trust",
    metadata,
    Column("server", String(200), primary_key=True),
    Column("tool", String(500), primary_key=True),
    Column("state", String(16), nullable=False),
    Column("pin", String(80)),
    Column("definition", _json()),  # what was approved, for the next review's diff
    Column("version", Integer, nullable=False),  # bumps with every decision: two at once, one wins
    Column("decided_by", String(320)),  # an administrator's email; null when approved automatically
    Column("decided_at", UTCDateTime, nullable=False),
    CheckConstraint("state IN ('approved', 'blocked')", name="ck_tool_trust_state"),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("owner", String(320), nullable=False, index=True),
    Column("name", String(200), nullable=False),
    Column("secret_hash", String(64), nullable=False),  # SHA-256 hex of the token's secret part
    Column("created_at", UTCDateTime, nullable=False),
    Column("last_used_at", UTCDateTime),
)

# Users' own credentials for MCP servers (user-entered tokens, OAuth tokens and clients);
# `value` is ciphertext (Fernet), never the credential itself.
user_credentials = Table(
    "user_credentials",
    metadata,
    Column("server", String(200), primary_key=True),
    Column("user", String(320), primary_key=True),
    Column("kind", String(32), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# Turns running in some app process (several processes on one Postgres): which process owns the
# conversation's turn, the processes' heartbeats, and a turn's events copied out for listeners on
# other processes. Rows live only while a turn runs (and shortly after).
live_turns = Table(
    "live_turns",
    metadata,
    Column("conversation_id", String(200), primary_key=True),
    Column("owner", String(320), nullable=False, index=True),
    Column("process_id", String(40), nullable=False, index=True),
    Column("started_at", UTCDateTime, nullable=False),
)

app_processes = Table(
    "app_processes",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("heartbeat_at", UTCDateTime, nullable=False),
    # user -> {"sessions": open pages, "servers": servers with a session of the user's own}, as of
    # that process's last share (web/admin/presence.py): the admin console adds the processes up.
    Column("presence", _json(), nullable=True),
)

turn_events = Table(
    "turn_events",
    metadata,
    Column("conversation_id", String(200), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("body", Text, nullable=False),
)

# Stored uploads (bytes in the file store), one row each: the upload quota is counted here, so every
# app process checks it against the same figures.
uploads = Table(
    "uploads",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("owner", String(320), nullable=False, index=True),
    Column("size", BigInteger, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
)

# OAuth sign-ins between the redirect and the callback: one per (server, user); the key is a
# hash of the `state`, the value (PKCE verifier, discovered metadata) encrypted like a credential.
oauth_pending = Table(
    "oauth_pending",
    metadata,
    Column("state_hash", String(64), primary_key=True),
    Column("server", String(200), nullable=False),
    Column("user", String(320), nullable=False),
    Column("value", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_oauth_pending_server_user", "server", "user", unique=True),
)

# Tasks (MCP extension `io.modelcontextprotocol/tasks`): calls a server runs in the background.
# `task_id` is the server's id; `id` the host's. A process polls the rows whose lease it holds.
tasks = Table(
    "tasks",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("task_id", String(500), nullable=False),
    Column("owner", String(320), nullable=False),
    Column("conversation_id", String(64), nullable=False, index=True),
    Column("server", String(200), nullable=False),
    Column("tool", String(500), nullable=False),  # the qualified name
    Column("call_id", String(64), nullable=False),
    Column("status", String(32), nullable=False),
    Column("progress", Float),
    Column("message", Text),
    Column("result", _json()),  # {ok, content, message_id} once finished
    Column("poll_interval_ms", Integer),
    Column("lease_owner", String(64)),
    Column("lease_until", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Index("ix_tasks_owner_created_at", "owner", "created_at"),
    Index("ix_tasks_status", "status"),
)

# The spellings an address had before addresses were normalized (migration 0007), for the
# conversations whose stored id is a hash of that spelling and a name the client picked.
owner_spellings = Table(
    "owner_spellings",
    metadata,
    Column("owner", String(320), primary_key=True),
    Column("spelling", String(320), primary_key=True),
)

# Servers the admin console added (`source` "admin": `entry` is the mcp.json entry as given, its
# ${VAR}s unexpanded), and config-file servers it switched on or off (`source` "config", no entry).
# `version` goes up with every change: an edit made against an older version is refused.
console_servers = Table(
    "console_servers",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("source", String(330), nullable=False),  # "admin", "config" or "user:<email>"
    Column("entry", _json()),
    Column("enabled", Boolean, nullable=False),
    Column("trust", String(16)),
    Column("version", Integer, nullable=False),
    Column("updated_by", String(320), nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

# A user's request to share their own server (server_shares.py): `pending` until an administrator
# decides; an approved one is gone (the server is the deployment's), a declined one keeps the reason.
server_shares = Table(
    "server_shares",
    metadata,
    Column("server", String(200), primary_key=True),  # the console row's name
    Column("owner", String(320), nullable=False),
    Column("name", String(64), nullable=False),  # the name its owner gave it
    Column("note", String(500)),
    Column("state", String(16), nullable=False),
    Column("requested_at", UTCDateTime, nullable=False),
    Column("decided_by", String(320)),
    Column("decided_at", UTCDateTime),
    Column("reason", String(500)),
    CheckConstraint("state IN ('pending', 'declined')", name="ck_server_shares_state"),
)

# Every user the host has seen: their groups with where each came from, first and last seen.
users_seen = Table(
    "users_seen",
    metadata,
    Column("email", String(320), primary_key=True),
    Column("groups", _json(), nullable=False),  # {group: "groups.yml" | "proxy header" | "group service"}
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
)

# The audit log (audit/, migration 0012): append-only, one hash chain per deployment. `body` is the
# record's canonical JSON without its hash; the other columns repeat fields of it for the filters
# (verify checks that they agree). Triggers refuse updates and deletes (deletes only below a
# boundary recorded in `audit_prunes`, which must be a signed checkpoint's seq).
audit_records = Table(
    "audit_records",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("ts", UTCDateTime, nullable=False, index=True),
    Column("kind", String(64), nullable=False),
    Column("user", String(320), index=True),
    Column("server", String(200)),
    Column("tool", String(500)),
    Column("decision", String(32)),
    Column("prev", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Column("body", Text, nullable=False),
)

audit_checkpoints = Table(
    "audit_checkpoints",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("ts", UTCDateTime, nullable=False),
    Column("hash", String(64), nullable=False),
    Column("signature", String(200), nullable=False),  # Ed25519 over the canonical {seq, hash, ts}, base64
    Column("public_key", String(100), nullable=False),  # base64 of the raw key that signed it
)

audit_prunes = Table(
    "audit_prunes",
    metadata,
    Column("through_seq", BigInteger, primary_key=True, autoincrement=False),
    Column("ts", UTCDateTime, nullable=False),
)
