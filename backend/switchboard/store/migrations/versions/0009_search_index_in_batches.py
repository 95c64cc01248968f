"""SQLite's search index takes new rows in batches; the redundant owner index goes.

Before, every message and conversation was added to its FTS5 table by a trigger, in the
transaction that wrote it. FTS5 writes a new segment for each transaction, so more than half the
pages a turn wrote were the index's (docs/benchmarks.md). Now `fts_indexed` holds, per table, the
highest rowid the index holds: rows above it are indexed later, many at once, by the writer
(`store.search.CATCH_UP`, before a search and every few hundred messages). The triggers act only on
rows the index holds already: a delete or an edit of such a row removes its old text, an edit adds
the new one, and a row inserted under a rowid at or below the mark (SQLite reuses the highest
rowid after a delete) is indexed at once. A search therefore always finds every committed row.

`ix_conversations_owner` served nothing `ix_conversations_owner_updated_at` (owner first) does not.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_SOURCES = (("messages", "messages_fts", "content"), ("conversations", "conversations_fts", "title"))


def _triggers(source: str, index: str, column: str, *, held_only: bool) -> list[str]:
    """The three triggers keeping `index` in step with `source`; `held_only`: for rows at or below
    the mark only (the others are indexed later, as they are then)."""

    def when(row: str) -> str:
        return f"WHEN {row}.rowid <= (SELECT up_to FROM fts_indexed WHERE source = '{source}')" if held_only else ""

    return [
        f"""CREATE TRIGGER {index}_ai AFTER INSERT ON {source} {when("new")} BEGIN
             INSERT INTO {index}(rowid, {column}) VALUES (new.rowid, new.{column});
           END""",
        f"""CREATE TRIGGER {index}_ad AFTER DELETE ON {source} {when("old")} BEGIN
             INSERT INTO {index}({index}, rowid, {column}) VALUES ('delete', old.rowid, old.{column});
           END""",
        f"""CREATE TRIGGER {index}_au AFTER UPDATE OF {column} ON {source} {when("old")} BEGIN
             INSERT INTO {index}({index}, rowid, {column}) VALUES ('delete', old.rowid, old.{column});
             INSERT INTO {index}(rowid, {column}) VALUES (new.rowid, new.{column});
           END""",
    ]


def _drop_triggers(index: str) -> None:
    for suffix in ("ai", "ad", "au"):
        op.execute(f"DROP TRIGGER IF EXISTS {index}_{suffix}")


def upgrade() -> None:
    op.drop_index("ix_conversations_owner", table_name="conversations")
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE fts_indexed (source VARCHAR(64) NOT NULL PRIMARY KEY, up_to INTEGER NOT NULL)")
    for source, index, column in _SOURCES:
        # every row there is now is indexed (by the triggers so far)
        op.execute(f"INSERT INTO fts_indexed (source, up_to) SELECT '{source}', coalesce(max(rowid), 0) FROM {source}")
        _drop_triggers(index)
        for trigger in _triggers(source, index, column, held_only=True):
            op.execute(trigger)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for source, index, column in _SOURCES:
            op.execute(
                f"INSERT INTO {index}(rowid, {column}) SELECT rowid, {column} FROM {source} "
                f"WHERE rowid > (SELECT up_to FROM fts_indexed WHERE source = '{source}')"
            )
            _drop_triggers(index)
            for trigger in _triggers(source, index, column, held_only=False):
                op.execute(trigger)
        op.execute("DROP TABLE fts_indexed")
    op.create_index("ix_conversations_owner", "conversations", ["owner"])
