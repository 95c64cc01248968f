"""What reading a long conversation costs the app: one 8 MB conversation (80 messages of
100,000 characters) read by N concurrent `GET /api/conversations/{id}`, against one
`switchboard serve` process (SQLite). Prints the app's resident memory before, its peak
during (VmHWM), the wall time, and what each answer carried.

    uv run python bench/conversation_reads.py [--readers 60] [--python OTHER/.venv/bin/python] [--json]

`--python` serves with another checkout's interpreter (e.g. before a change), same data."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

MESSAGES, CHARS = 80, 100_000
CONVERSATION = "big-conversation-1"


async def seed(folder: Path) -> None:
    from switchboard.store import open_store

    store = await open_store(f"sqlite+aiosqlite:///{folder}/data/switchboard.db")
    try:
        await store.create_conversation(
            id=CONVERSATION, owner="dev@localhost", title="long", model=None, compliance_level=None
        )
        parent = None
        for i in range(MESSAGES):
            words = " ".join(f"word{i}-{n}" for n in range(CHARS // 12))[:CHARS]
            parent = (
                await store.add_message(
                    CONVERSATION,
                    id=f"m{i:04d}",
                    parent_id=parent,
                    role="user" if i % 2 == 0 else "assistant",
                    content=words,
                )
            ).id
    finally:
        await store.close()


async def run(args: Any) -> dict[str, Any]:
    import httpx

    with tempfile.TemporaryDirectory(prefix="bench-reads-") as tmp:
        folder = Path(tmp)
        env = S.write_site(folder, {}, None)
        (folder / "data").mkdir()
        await seed(folder)
        command = [args.python, "-m", "switchboard"] if args.python else None
        with S.app_process(folder, env, command=command) as app:
            url = f"{app.base}/api/conversations/{CONVERSATION}"
            async with httpx.AsyncClient(timeout=300) as client:
                await client.get(url)  # warm: imports, the first render
                rss_before = S.proc_kib(app.pid)
                started = time.monotonic()
                answers = await asyncio.gather(*(client.get(url) for _ in range(args.readers)))
                wall = time.monotonic() - started
            peak = S.proc_kib(app.pid, "VmHWM")
            rss_after = S.proc_kib(app.pid)
    body = answers[0].json()
    return {
        "readers": args.readers,
        "conversation_mb": round(MESSAGES * CHARS / 1e6, 1),
        "status": sorted({a.status_code for a in answers}),
        "messages_per_answer": len(body["messages"]),
        "answer_mb": round(len(answers[0].content) / 1e6, 2),
        "rss_before_mb": round(rss_before / 1024),
        "peak_mb": round(peak / 1024),
        "rss_after_mb": round(rss_after / 1024),
        "wall_s": round(wall, 2),
    }


def main() -> None:
    parser = S.parser(__doc__ or "")
    parser.add_argument("--readers", type=int, default=60)
    parser.add_argument("--python", help="serve with this interpreter (another checkout's venv)")
    args = parser.parse_args()
    started, load = time.monotonic(), S.machine()["loadavg"]
    data = asyncio.run(run(args))
    S.print_table(list(data), [list(data.values())])
    S.report("conversation_reads", data, args, started, load)


if __name__ == "__main__":
    main()
