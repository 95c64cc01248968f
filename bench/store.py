"""The conversation store at size: listing, search and one add_message, on SQLite and Postgres.

For each backend a fresh database (SQLite: a file in a temp dir; Postgres: a throw-away
server from the system's binaries, as the tests start it) is migrated and filled in bulk:
one user with 10,000 conversations of 10 messages (100,000 messages, ~250 characters of
generated prose each; updated_at spread over a year) and a second user with 500 more.
Then, through the real `ConversationStore`:
  list     the first page (50) of the user's conversations, newest first; and the tenth page
           (`before` = the last updated_at of the page above)
  search   `q` over titles and all 100,000 messages: a word in ~10 messages, a word in ~20 %
           of them, a substring inside words, a two-letter query (no trigram index: a scan),
           and a word nobody wrote
  add      one `add_message` (a committed transaction) to a conversation of the full database
  turn     what storing one tool turn costs, through the real `Conversations` as the turn engine
           calls it: a new conversation with its user message (`turn_for`, `begin`), the
           assistant message with its tool call (in the background), the tool result, and the
           final answer, each commit where the loop makes it (chat/recording.py); CPU (this
           process) and wall time per turn
Each figure is the p50 and p99 over `--reps` calls, one after another (`--parts` picks parts;
`--parts turn` needs no bulk fill and runs in seconds). Postgres runs with
its default settings (fsync on) and is ANALYZEd after the bulk load (autovacuum would do it in
service); SQLite runs as the app opens it (WAL, synchronous=NORMAL).

    uv run python bench/store.py [--conversations 10000] [--reps 200] [--backends sqlite,postgres]
                                 [--parts list,search,add,turn] [--json]
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

import _support as S
from switchboard.chat.conversations import Conversations
from switchboard.chat.events import ChatMessage
from switchboard.config.models import ComplianceLevels
from switchboard.files.artifacts import ArtifactStore
from switchboard.history import AssistantText, CallRecord, ToolReply, UserText
from switchboard.identity.users import User
from switchboard.store import open_store
from switchboard.store.engine import WRITE, make_engine
from switchboard.store.models import conversations, messages
from tests.support.postgres import PostgresCluster, find_bin_dir

GOAL_LIST_MS, GOAL_SEARCH_MS = 50.0, 200.0
OWNER, OTHER = "ann@example.com", "bob@example.com"
RARE, COMMON = "zanzibarquux", "meeting"


def _vocabulary(rng: random.Random, n: int = 3000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ter", "van", "sul", "pre", "dor", "ex", "qua", "ri", "no", "ble", "stan", "fu"]
    return ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(n)]


def _rows(conversation_count: int, per: int, seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    words = _vocabulary(rng)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    convs: list[dict[str, Any]] = []
    msgs: list[dict[str, Any]] = []
    rare_left = 10
    owners = [OWNER] * conversation_count + [OTHER] * 500
    for n, owner in enumerate(owners):
        cid = f"c{n:06d}"
        created = start + timedelta(seconds=rng.uniform(0, 365 * 86400))
        title = " ".join(rng.choice(words) for _ in range(rng.randint(2, 5))).capitalize()
        parent = None
        for k in range(per):
            text_words = [rng.choice(words) for _ in range(rng.randint(20, 60))]
            if rng.random() < 0.2:
                text_words.insert(rng.randrange(len(text_words)), COMMON)
            if owner == OWNER and rare_left and rng.random() < 0.001:
                text_words.append(RARE)
                rare_left -= 1
            mid = f"{cid}-m{k}"
            msgs.append(
                {
                    "id": mid,
                    "conversation_id": cid,
                    "parent_id": parent,
                    "seq": k + 1,
                    "role": "user" if k % 2 == 0 else "assistant",
                    "content": " ".join(text_words) + ".",
                    "data": {},
                    "created_at": created + timedelta(seconds=k),
                }
            )
            parent = mid
        updated = created + timedelta(seconds=per)
        convs.append(
            {
                "id": cid,
                "owner": owner,
                "title": title,
                "model": "m",
                "compliance_level": None,
                "levels_used": [None],
                "leaf_id": parent,
                "message_count": per,
                "created_at": created,
                "updated_at": updated,
            }
        )
    return convs, msgs


async def _fill(url: str, convs: list[dict[str, Any]], msgs: list[dict[str, Any]]) -> float:
    started = time.monotonic()
    await (await open_store(url)).close()  # migrates
    engine = make_engine(url)
    try:
        async with engine.execution_options(**WRITE).begin() as conn:
            for i in range(0, len(convs), 2000):
                await conn.execute(insert(conversations), convs[i : i + 2000])
            for i in range(0, len(msgs), 5000):
                await conn.execute(insert(messages), msgs[i : i + 5000])
        if engine.dialect.name == "postgresql":
            async with engine.connect() as conn:
                await conn.execution_options(isolation_level="AUTOCOMMIT")
                await conn.execute(text("VACUUM ANALYZE"))
    finally:
        await engine.dispose()
    return time.monotonic() - started


async def _timed(reps: int, call: Any) -> tuple[list[float], Any]:
    await call()  # warm the pool and caches
    times, result = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = await call()
        times.append((time.perf_counter() - t0) * 1000)
    return times, result


async def _tool_turn(conversations: Conversations, user: User, compliance: ComplianceLevels, n: int) -> None:
    """The store's part of one tool turn, as the turn engine makes it (chat/loop.py, chat/tool_round.py):
    records are kept, and committed where the loop commits."""
    request = ChatMessage(
        type="chat", content="Please echo hello with the toolbox.", conversation_id=f"bench-turn-{n:08d}"
    )
    turn = await conversations.turn_for(user, request, "unused-current-id", compliance)
    turn.model = "double"
    recorder, answer = conversations.recorder, f"answer-{n}"
    recorder.keep(turn, UserText(id=f"u-{n}", text=request.content), {"files": [], "resources": []})
    await recorder.begin(turn, request.content)  # a new conversation with its question
    call = CallRecord(f"call_{n}", "toolbox_echo", '{"text": "hello"}')
    recorder.keep(turn, AssistantText(id=f"a-{n}", text="", calls=(call,)), {"turn": answer})
    recorder.commit_soon(turn)  # while the call runs
    recorder.keep(
        turn,
        ToolReply(id=f"t-{n}", call_id=call.call_id, tool="toolbox_echo", server="toolbox", ok=True, text="hello"),
        {
            "results": None,
            "duration_ms": 3,
            "artifacts": [],
            "content": "hello",
            "arguments": {"text": "hello"},
            "turn": answer,
        },
    )
    await recorder.commit(turn)  # before the tool_result
    usage = {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}
    recorder.keep(turn, AssistantText(id=answer, text="hello", finish_reason="stop"), {"turn": answer, "usage": usage})
    await recorder.commit(turn)  # before the message_done


async def _turns(url: str, reps: int, files_dir: str) -> dict[str, Any]:
    """CPU and wall time per tool turn's store work (p50/p99 of each turn, and the mean CPU)."""
    store = await open_store(url)
    try:
        conversations = Conversations(store, ArtifactStore(Path(files_dir)))
        user, compliance = User(email=OWNER, groups=frozenset({"users"})), ComplianceLevels()
        for n in range(20):  # warm the pool and caches
            await _tool_turn(conversations, user, compliance, 10**7 + n)
        cpu_ms, wall_ms = [], []
        for n in range(reps):
            c0, t0 = time.process_time(), time.perf_counter()
            await _tool_turn(conversations, user, compliance, n)
            wall_ms.append((time.perf_counter() - t0) * 1000)
            cpu_ms.append((time.process_time() - c0) * 1000)
        stored = await store.messages(
            conversations.ids.scoped(OWNER, f"bench-turn-{reps - 1:08d}")
        )  # an id the client picked
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"], stored
    finally:
        await store.close()
    return {
        "what": "tool turn: a new conversation and 4 messages",
        "p50_ms": S.percentile(wall_ms, 50),
        "p99_ms": S.percentile(wall_ms, 99),
        "cpu_p50_ms": S.percentile(cpu_ms, 50),
        "cpu_mean_ms": sum(cpu_ms) / len(cpu_ms),
        "found": "",
        "goal_ms": None,
    }


async def _measure(url: str, reps: int, parts: set[str]) -> list[dict[str, Any]]:
    store = await open_store(url)
    out: list[dict[str, Any]] = []
    try:

        def row(what: str, times: list[float], found: Any, goal: float | None) -> None:
            out.append(
                {
                    "what": what,
                    "p50_ms": S.percentile(times, 50),
                    "p99_ms": S.percentile(times, 99),
                    "found": found,
                    "goal_ms": goal,
                }
            )

        if "list" in parts:
            times, page = await _timed(reps, lambda: store.list_conversations(OWNER, limit=50))
            row("list: first page of 50", times, len(page), GOAL_LIST_MS)
            before = page[-1].updated_at
            for _ in range(8):
                before = (await store.list_conversations(OWNER, limit=50, before=before))[-1].updated_at
            times, page = await _timed(reps, lambda: store.list_conversations(OWNER, limit=50, before=before))
            row("list: tenth page (before=)", times, len(page), GOAL_LIST_MS)
        for label, q in (
            (
                (f"rare word ({RARE})", RARE),
                (f"common word ({COMMON})", COMMON),
                ("substring inside words (anter)", "anter"),
                ("two letters (zq)", "zq"),
                ("nobody wrote it (xylophone)", "xylophone"),
            )
            if "search" in parts
            else ()
        ):
            times, found = await _timed(max(20, reps // 4), lambda q=q: store.list_conversations(OWNER, q=q, limit=50))
            row(f"search: {label}", times, len(found), GOAL_SEARCH_MS)
        if "add" not in parts:
            return out
        await store.create_conversation(id="bench-add", owner=OWNER, title="adds", model=None, compliance_level=None)
        counter = iter(range(10**6))
        parent: list[str | None] = [None]

        async def add() -> None:
            m = await store.add_message(
                "bench-add",
                id=f"add-{next(counter)}",
                parent_id=parent[0],
                role="user",
                content="a message of ordinary length " * 8,
            )
            parent[0] = m.id

        times, _ = await _timed(reps, add)
        row("add_message (one committed transaction)", times, "", None)
    finally:
        await store.close()
    return out


async def run(args: Any) -> dict[str, Any]:
    parts = set(args.parts.split(","))
    convs, msgs = _rows(args.conversations, args.per_conversation) if parts & {"list", "search", "add"} else ([], [])
    results: dict[str, Any] = {
        "conversations": args.conversations,
        "messages": args.conversations * args.per_conversation,
    }
    for backend in args.backends.split(","):
        cluster = None
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "sqlite":
                url = f"sqlite+aiosqlite:///{tmp}/switchboard.db"
            else:
                bin_dir = find_bin_dir()
                if bin_dir is None:
                    print("PostgreSQL is not installed (apt-get install -y postgresql): skipping it", file=sys.stderr)
                    continue
                cluster = PostgresCluster(bin_dir, durable=True)  # fsync on, as in service
                cluster.start()
                url = cluster.create_database()
            try:
                fill_s = 0.0
                if parts & {"list", "search", "add"}:
                    fill_s = await _fill(url, convs, msgs)
                    print(f"\n{backend}: filled {len(convs):,} conversations, {len(msgs):,} messages in {fill_s:.1f} s")
                else:
                    print(f"\n{backend}: an empty database")
                rows = await _measure(url, args.reps, parts)
                if "turn" in parts:
                    rows.append(await _turns(url, args.reps, f"{tmp}/files"))
            finally:
                if cluster:
                    cluster.stop()
        S.print_table(
            ["what", "p50 ms", "p99 ms", "CPU p50 ms", "CPU mean ms", "found", "goal ms"],
            [
                [
                    r["what"],
                    r["p50_ms"],
                    r["p99_ms"],
                    r.get("cpu_p50_ms", "-"),
                    r.get("cpu_mean_ms", "-"),
                    r["found"],
                    r["goal_ms"] or "-",
                ]
                for r in rows
            ],
        )
        results[backend] = {"fill_s": round(fill_s, 1), "rows": rows}
    return results


def main() -> int:
    p = S.parser(__doc__.splitlines()[0])
    p.add_argument("--conversations", type=int, default=10_000)
    p.add_argument("--per-conversation", type=int, default=10)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--backends", default="sqlite,postgres")
    p.add_argument("--parts", default="list,search,add,turn", help="which measurements (comma-separated)")
    args = p.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    S.report("store", data, args, started, load_before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
