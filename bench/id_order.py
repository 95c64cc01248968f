"""What the order of new ids costs a large store: a stored tool turn's writes (a new conversation
with its question, the call with its result, the answer: three `TurnWrites.append` calls, four
messages) on a SQLite file that already holds `--rows` messages, with ids made as before
(`secrets.token_urlsafe(12)`: random) and as now (`chat.session.new_id`: the time first).

The store is the app's own (`open_store`: its migrations, its writer thread, its statements). The
rows already there are written straight into its tables, with ids of the same kind, and marked as
held by the search index (their indexing is not what is measured); the file is then checkpointed
and reopened, so every run starts from the disk's state. CPU is this process's (the writer thread
included) per turn; KiB written per turn is what the process handed to `write`/`pwrite` (its
`wchar` in /proc/self/io: WAL frames and the checkpoints that copy them into the database file).
Kinds and sizes run in turn, `--rounds` times.

With `--postgres` the store is a throw-away PostgreSQL server with its default durability (fsync,
full-page writes), one fresh database per run, filled by COPY and checkpointed; a turn writes its
four messages one statement each, as the app does there. The figures are then the server's: the
WAL it wrote per turn (`pg_current_wal_lsn`) and its processes' CPU per turn.

    uv run python bench/id_order.py [--rows 0,300000] [--turns 400] [--rounds 2] [--postgres] [--json]
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _support as S

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))

from switchboard.chat.conversation_state import new_id
from switchboard.store import NewConversation, NewMessage, open_store


def random_id() -> str:
    return secrets.token_urlsafe(12)  # the ids of every release before this one


KINDS = {"random (before)": random_id, "time first (now)": new_id}
PER_CONVERSATION = 10  # messages per conversation already stored


CONVERSATION_COLUMNS = [
    "id",
    "owner",
    "title",
    "model",
    "compliance_level",
    "levels_used",
    "leaf_id",
    "message_count",
    "created_at",
    "updated_at",
]
MESSAGE_COLUMNS = ["id", "conversation_id", "parent_id", "seq", "role", "content", "data", "created_at"]


def _stored_rows(rows: int, make_id: Any, now: Any) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The conversations and messages a store holds already: `rows` messages, ten per conversation."""
    conversation_rows, message_rows = [], []
    for _ in range(rows // PER_CONVERSATION):
        cid = make_id()
        ids = [make_id() for _ in range(PER_CONVERSATION)]
        conversation_rows.append(
            (cid, "someone@example.com", "t", None, None, "[null]", ids[-1], PER_CONVERSATION, now, now)
        )
        for seq, mid in enumerate(ids, 1):
            message_rows.append((mid, cid, ids[seq - 2] if seq > 1 else None, seq, "user", "x" * 200, "{}", now))
    return conversation_rows, message_rows


async def _one_turn(store: Any, make_id: Any, *, joined: bool) -> None:
    """A stored tool turn's writes: a new conversation with its question, the call with its result
    (together on SQLite, where the app joins them; one at a time on Postgres), the answer."""
    cid, q, call, result, answer = (make_id() for _ in range(5))
    await store.append(
        cid,
        [NewMessage(q, None, "user", "Please echo hello with the toolbox.")],
        create=NewConversation("someone@example.com", "Please echo hello", "demo", None),
    )
    call_message = NewMessage(call, q, "assistant", "", {"tool_calls": [{"id": "c1", "name": "toolbox_echo"}]})
    result_message = NewMessage(result, call, "tool", "hello", {"call_id": "c1", "ok": True})
    if joined:
        await store.append(cid, [call_message, result_message])
    else:
        await store.append(cid, [call_message])
        await store.append(cid, [result_message])
    await store.append(cid, [NewMessage(answer, result, "assistant", "Echoed: hello", {"finish_reason": "stop"})])


def _prefill(path: Path, rows: int, make_id: Any) -> None:
    conversation_rows, message_rows = _stored_rows(rows, make_id, "2026-11-26 10:00:00.000000")
    db = sqlite3.connect(path)
    with db:
        db.executemany(
            f"INSERT INTO conversations ({', '.join(CONVERSATION_COLUMNS)}) VALUES (?,?,?,?,?,?,?,?,?,?)",
            conversation_rows,
        )
        db.executemany(f"INSERT INTO messages ({', '.join(MESSAGE_COLUMNS)}) VALUES (?,?,?,?,?,?,?,?)", message_rows)
        for source in ("messages", "conversations"):
            db.execute(
                f"UPDATE fts_indexed SET up_to = (SELECT coalesce(max(rowid), 0) FROM {source}) WHERE source = ?",
                (source,),
            )
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def _written() -> int:
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))


async def _turns(url: str, turns: int, make_id: Any) -> dict[str, float]:
    store = await open_store(url)
    try:
        await store.list_conversations("nobody@example.com")  # the store's threads and statements warm
        written, cpu, wall = _written(), time.process_time(), time.perf_counter()
        for _ in range(turns):
            await _one_turn(store, make_id, joined=True)
        cpu, wall, written = time.process_time() - cpu, time.perf_counter() - wall, _written() - written
    finally:
        await store.close()
    return {
        "cpu_ms_per_turn": cpu * 1000 / turns,
        "ms_per_turn": wall * 1000 / turns,
        "kib_written_per_turn": written / 1024 / turns,
    }


async def _pg_prefill(url: str, rows: int, make_id: Any) -> None:
    import asyncpg

    conversation_rows, message_rows = _stored_rows(rows, make_id, datetime(2026, 11, 26, 10, tzinfo=UTC))
    db = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await db.copy_records_to_table("conversations", records=conversation_rows, columns=CONVERSATION_COLUMNS)
        await db.copy_records_to_table("messages", records=message_rows, columns=MESSAGE_COLUMNS)
        await db.execute("VACUUM ANALYZE")
        await db.execute("CHECKPOINT")
    finally:
        await db.close()


def _server_cpu_s(postmaster: int) -> float:
    return S.proc_cpu_s(postmaster) + sum(S.proc_cpu_s(pid) for pid in S.children(postmaster))


async def _pg_turns(url: str, turns: int, make_id: Any, postmaster: int) -> dict[str, float]:
    import asyncpg

    store = await open_store(url)
    db = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await store.list_conversations("nobody@example.com")
        lsn, server, cpu = (
            await db.fetchval("SELECT pg_current_wal_lsn()"),
            _server_cpu_s(postmaster),
            time.process_time(),
        )
        wall = time.perf_counter()
        for _ in range(turns):
            await _one_turn(store, make_id, joined=False)
        wall, cpu, server = time.perf_counter() - wall, time.process_time() - cpu, _server_cpu_s(postmaster) - server
        wal = await db.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)", lsn)
    finally:
        await db.close()
        await store.close()
    return {
        "server_cpu_ms_per_turn": server * 1000 / turns,
        "app_cpu_ms_per_turn": cpu * 1000 / turns,
        "ms_per_turn": wall * 1000 / turns,
        "wal_kib_per_turn": float(wal) / 1024 / turns,
    }


def _postgres(args: Any, sizes: list[int], started: float, load_before: list[float]) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.support.postgres import PostgresCluster, find_bin_dir

    cluster = PostgresCluster(find_bin_dir(), durable=True)
    cluster.start()
    try:
        assert cluster.dir is not None
        postmaster = int((cluster.dir / "data" / "postmaster.pid").read_text().split()[0])
        results: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for rows in sizes:
                for kind, make_id in KINDS.items():
                    url = cluster.create_database()
                    asyncio.run(_migrate(url))
                    asyncio.run(_pg_prefill(url, rows, make_id))
                    results.setdefault(f"{rows}|{kind}", []).append(
                        asyncio.run(_pg_turns(url, args.turns, make_id, postmaster))
                    )
    finally:
        cluster.stop()
    out = []
    for key, runs in results.items():
        size, kind = key.split("|")
        out.append(
            [
                f"{int(size):,}",
                kind,
                *(
                    " / ".join(f"{r[field]:.{digits}f}" for r in runs)
                    for field, digits in (
                        ("wal_kib_per_turn", 1),
                        ("server_cpu_ms_per_turn", 3),
                        ("app_cpu_ms_per_turn", 3),
                        ("ms_per_turn", 3),
                    )
                ),
            ]
        )
    S.print_table(
        ["messages stored", "ids", "WAL KiB per turn", "server CPU ms per turn", "app CPU ms per turn", "ms per turn"],
        out,
    )
    S.report("id_order", {"results": results, "turns": args.turns, "postgres": True}, args, started, load_before)


def main() -> None:
    p = S.parser(__doc__.splitlines()[0])
    p.add_argument("--rows", default="0,300000", help="comma-separated counts of messages already stored")
    p.add_argument("--turns", type=int, default=400)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--postgres", action="store_true", help="a throw-away PostgreSQL server instead of a SQLite file")
    args = p.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    sizes = [int(x) for x in args.rows.split(",")]
    if args.postgres:
        _postgres(args, sizes, started, load_before)
        return
    results: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ids-") as tmp:
        for _ in range(args.rounds):
            for rows in sizes:
                for kind, make_id in KINDS.items():
                    folder = Path(tempfile.mkdtemp(dir=tmp))
                    path = folder / "switchboard.db"
                    url = f"sqlite+aiosqlite:///{path}"
                    asyncio.run(_migrate(url))
                    _prefill(path, rows, make_id)
                    results.setdefault(f"{rows}|{kind}", []).append(asyncio.run(_turns(url, args.turns, make_id)))
    rows_out = []
    for key, runs in results.items():
        size, kind = key.split("|")
        rows_out.append(
            [
                f"{int(size):,}",
                kind,
                " / ".join(f"{r['cpu_ms_per_turn']:.3f}" for r in runs),
                " / ".join(f"{r['kib_written_per_turn']:.0f}" for r in runs),
                " / ".join(f"{r['ms_per_turn']:.3f}" for r in runs),
            ]
        )
    S.print_table(["messages stored", "ids", "CPU ms per turn", "KiB written per turn", "ms per turn"], rows_out)
    S.report("id_order", {"results": results, "turns": args.turns}, args, started, load_before)


async def _migrate(url: str) -> None:
    store = await open_store(url)
    await store.close()


if __name__ == "__main__":
    main()
