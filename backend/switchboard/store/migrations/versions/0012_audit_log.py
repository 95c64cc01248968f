"""The audit log: records in one hash chain, signed checkpoints, and the pruning boundary.

The database itself refuses to change the log: triggers refuse every UPDATE of the three tables,
every DELETE of checkpoints and prune marks, and a DELETE of a record unless its seq is at or
below the highest `audit_prunes.through_seq`; a prune mark may only be inserted at the seq of a
signed checkpoint (so a retention prune removes only whole checkpointed spans, and says so).
Someone who may drop triggers can still edit the rows: `switchboard audit verify` finds that.

On PostgreSQL, `audit_append` is the app's append as one statement (store/governance/audit_pg.py): it takes
the chain's advisory lock, checks that the chain still ends at the seq and hash the app sealed the
batch after, and inserts the batch (one array per column); if the chain moved on, it inserts
nothing and returns false. It runs with the caller's rights, so the triggers apply to it as well.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_REFUSED = "audit rows are append-only"


def _sqlite_triggers() -> list[str]:
    refuse = f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}'); END"
    return [
        f"CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records {refuse}",
        "CREATE TRIGGER audit_records_no_delete BEFORE DELETE ON audit_records "
        "WHEN old.seq > (SELECT coalesce(max(through_seq), 0) FROM audit_prunes) "
        f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}: only records below a recorded prune boundary may go'); END",
        f"CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints {refuse}",
        f"CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints {refuse}",
        f"CREATE TRIGGER audit_prunes_no_update BEFORE UPDATE ON audit_prunes {refuse}",
        f"CREATE TRIGGER audit_prunes_no_delete BEFORE DELETE ON audit_prunes {refuse}",
        "CREATE TRIGGER audit_prunes_checkpointed BEFORE INSERT ON audit_prunes "
        "WHEN NOT EXISTS (SELECT 1 FROM audit_checkpoints WHERE seq = new.through_seq) "
        "BEGIN SELECT RAISE(ABORT, 'a prune boundary must be a checkpoint''s seq'); END",
    ]


def _postgres_triggers() -> list[str]:
    return [
        f"""CREATE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION '{_REFUSED} (%)', TG_TABLE_NAME; END $$""",
        f"""CREATE FUNCTION audit_records_delete() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF OLD.seq > (SELECT coalesce(max(through_seq), 0) FROM audit_prunes) THEN
                RAISE EXCEPTION '{_REFUSED}: only records below a recorded prune boundary may go';
              END IF;
              RETURN OLD;
            END $$""",
        """CREATE FUNCTION audit_prunes_insert() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NOT EXISTS (SELECT 1 FROM audit_checkpoints WHERE seq = NEW.through_seq) THEN
                RAISE EXCEPTION 'a prune boundary must be a checkpoint''s seq';
              END IF;
              RETURN NEW;
            END $$""",
        "CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records "
        "FOR EACH ROW EXECUTE FUNCTION audit_refuse()",
        "CREATE TRIGGER audit_records_no_delete BEFORE DELETE ON audit_records "
        "FOR EACH ROW EXECUTE FUNCTION audit_records_delete()",
        "CREATE TRIGGER audit_checkpoints_no_change BEFORE UPDATE OR DELETE ON audit_checkpoints "
        "FOR EACH ROW EXECUTE FUNCTION audit_refuse()",
        "CREATE TRIGGER audit_prunes_no_change BEFORE UPDATE OR DELETE ON audit_prunes "
        "FOR EACH ROW EXECUTE FUNCTION audit_refuse()",
        "CREATE TRIGGER audit_prunes_checkpointed BEFORE INSERT ON audit_prunes "
        "FOR EACH ROW EXECUTE FUNCTION audit_prunes_insert()",
    ] + [
        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION audit_refuse()"
        for table in ("audit_records", "audit_checkpoints", "audit_prunes")
    ]


# (PL/pgSQL takes a new snapshot for each statement of a VOLATILE function: the tail read after the
# lock sees every append committed before the lock was granted)
_POSTGRES_APPEND = """CREATE FUNCTION audit_append(
    lock_key bigint, after_seq bigint, after_hash text, tss text[], kinds text[], users text[],
    servers text[], tools text[], decisions text[], hashes text[], bodies text[]
) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  end_seq bigint;
  end_hash text;
BEGIN
  PERFORM pg_advisory_xact_lock(lock_key);
  SELECT r.seq, r.hash INTO end_seq, end_hash FROM audit_records r ORDER BY r.seq DESC LIMIT 1;
  IF end_seq IS DISTINCT FROM after_seq OR end_hash IS DISTINCT FROM after_hash THEN
    RETURN false;
  END IF;
  INSERT INTO audit_records (seq, ts, kind, "user", server, tool, decision, prev, hash, body)
  SELECT after_seq + b.n, b.ts::timestamptz, b.kind, b.usr, b.server, b.tool, b.decision,
         CASE WHEN b.n = 1 THEN after_hash ELSE hashes[b.n - 1] END, b.hash, b.body
  FROM unnest(tss, kinds, users, servers, tools, decisions, hashes, bodies)
       WITH ORDINALITY AS b(ts, kind, usr, server, tool, decision, hash, body, n);
  RETURN true;
END $$"""


def upgrade() -> None:
    op.create_table(
        "audit_records",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("user", sa.String(320)),
        sa.Column("server", sa.String(200)),
        sa.Column("tool", sa.String(500)),
        sa.Column("decision", sa.String(32)),
        sa.Column("prev", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_audit_records_ts", "audit_records", ["ts"])
    op.create_index("ix_audit_records_user", "audit_records", ["user"])
    op.create_table(
        "audit_checkpoints",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(200), nullable=False),
        sa.Column("public_key", sa.String(100), nullable=False),
    )
    op.create_table(
        "audit_prunes",
        sa.Column("through_seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
    )
    triggers = _sqlite_triggers() if op.get_bind().dialect.name == "sqlite" else _postgres_triggers()
    for statement in triggers:
        op.execute(statement)
    if op.get_bind().dialect.name != "sqlite":
        op.execute(_POSTGRES_APPEND)


def downgrade() -> None:
    for table in ("audit_prunes", "audit_checkpoints", "audit_records"):
        op.drop_table(table)  # (their triggers go with them)
    if op.get_bind().dialect.name != "sqlite":
        for function in ("audit_refuse", "audit_records_delete", "audit_prunes_insert"):
            op.execute(f"DROP FUNCTION IF EXISTS {function}()")
        op.execute("DROP FUNCTION IF EXISTS audit_append")
