"""Event delivery between app processes: how much later a page attached to a turn through another
process sees each event than a page on the process running the turn.

Two `switchboard serve` processes on one throw-away PostgreSQL. A websocket on process A starts a
turn whose model (the HTTP LLM double, its own process) streams a long answer, one token every
`--chunk-ms`; once it is under way a websocket on process B attaches. For every event B receives
live (after its replay), the delay is B's arrival time minus A's arrival time of the same event
(both sockets are read in this one process, on one clock). A first turn the other way round is
not measured: both apps have loaded the model library (seconds of CPU on the event loop) before
the measured turns. The control: a bare NOTIFY between two
connections of this process, without the app, the floor the machine and Postgres set. Each run also checks that B got the
answer whole: its text (the replay, then the live tokens) is A's, with no token missing or twice.
Postgres runs with its durable defaults (fsync on), as in production.

    uv run python bench/relay.py [--turns 5] [--tokens 300] [--chunk-ms 5] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.postgres import PostgresCluster, find_bin_dir


async def _turn(a: S.App, b: S.App) -> list[float]:
    import websockets

    async with websockets.connect(a.ws_url, max_size=2**24) as wa, websockets.connect(b.ws_url, max_size=2**24) as wb:
        await wa.recv()
        await wb.recv()
        await wa.send(json.dumps({"type": "chat", "content": "Tell me a long story."}))
        seen_a: list[tuple[str, float]] = []
        conversation = None
        while conversation is None or len([e for e in seen_a if '"token"' in e[0]]) < 20:
            raw = await wa.recv()
            seen_a.append((raw, time.perf_counter()))
            event = json.loads(raw)
            conversation = conversation or event.get("conversation_id")
        await wb.send(json.dumps({"type": "attach", "conversation_id": conversation}))

        async def read(ws: Any, into: list[tuple[str, float]]) -> None:
            while True:
                raw = await ws.recv()
                into.append((raw, time.perf_counter()))
                if json.loads(raw)["type"] == "message_done":
                    return

        seen_b: list[tuple[str, float]] = []
        await asyncio.gather(read(wa, seen_a), read(wb, seen_b))
    assert _text(seen_b) == _text(seen_a), "the page on B did not get the answer exactly once, in order"
    return _delays(seen_a, seen_b)


async def _notify_floor(url: str, pings: int = 300) -> list[float]:
    """The control: one NOTIFY from one connection to another, without the app (what the machine
    and Postgres take for a message between two processes)."""
    import asyncpg

    sender = await asyncpg.connect(url, server_settings={"synchronous_commit": "off"})
    listener = await asyncpg.connect(url)
    got: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("bench", lambda *_: got.put_nowait(time.perf_counter()))
    delays = []
    try:
        for n in range(pings):
            sent = time.perf_counter()
            await sender.execute("SELECT pg_notify('bench', $1)", str(n))
            delays.append((await got.get() - sent) * 1000)
            await asyncio.sleep(0.005)
    finally:
        await sender.close()
        await listener.close()
    return delays


def _delays(seen_a: list[tuple[str, float]], seen: list[tuple[str, float]]) -> list[float]:
    # `attached`, then the replay (the tokens so far coalesced), then the live events, the same
    # texts as A's last ones: the longest common tail.
    pairs = []
    for x, y in zip(reversed(seen_a), reversed(seen)):
        if x[0] != y[0]:
            break
        pairs.append((x, y))
    assert len(pairs) > 20, f"only {len(pairs)} events matched"
    return [(y[1] - x[1]) * 1000 for x, y in pairs]


def _text(seen: list[tuple[str, float]]) -> str:
    events = [json.loads(raw) for raw, _ in seen]
    assert [e["type"] for e in events].count("message_done") == 1
    return "".join(e["text"] for e in events if e["type"] == "token")


def main() -> None:
    p = S.parser(__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--tokens", type=int, default=300)
    p.add_argument("--chunk-ms", type=float, default=5.0)
    args = p.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    cluster = PostgresCluster(find_bin_dir(), durable=True)
    cluster.start()
    try:
        url = cluster.create_database()
        with (
            tempfile.TemporaryDirectory(prefix="bench-relay-") as tmp,
            S.double_process(text_only=True, chunk_delay_s=args.chunk_ms / 1000, answer_tokens=args.tokens) as double,
        ):
            env = S.write_site(Path(tmp), {}, double.base_url)
            env |= {"SWITCHBOARD_DATABASE_URL": url, "SWITCHBOARD_SECRET_KEY": "bench-relay-key-0123456789abcdef"}
            with S.app_process(Path(tmp), env) as a, S.app_process(Path(tmp), env) as b:
                asyncio.run(_turn(b, a))  # not measured: both processes have run a turn (the model library loaded)
                delays: list[float] = []
                for _ in range(args.turns):
                    delays += asyncio.run(_turn(a, b))
                control = asyncio.run(_notify_floor(cluster.url(driver="postgresql")))
    finally:
        cluster.stop()
    figures: dict[str, Any] = {}
    rows = []
    for label, values in (("page through another process", delays), ("bare NOTIFY (control)", control)):
        row = {
            "events": len(values),
            "p50_ms": S.percentile(values, 50),
            "p90_ms": S.percentile(values, 90),
            "p99_ms": S.percentile(values, 99),
            "max_ms": max(values),
        }
        figures["relay" if label.startswith("page") else "control"] = row
        rows.append([label, *row.values()])
    S.print_table(["page", "events", "p50 ms", "p90 ms", "p99 ms", "max ms"], rows)
    S.report("relay", figures, args, started, load_before)


if __name__ == "__main__":
    main()
