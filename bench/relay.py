"""Event delivery between app processes: how much later a page attached to a turn through another
process sees each event than a page on the process running the turn.

Two `switchboard serve` processes on one throw-away PostgreSQL. A websocket on process A starts a
turn whose model (the HTTP LLM double, its own process) streams a long answer, one token every
`--chunk-ms`; once it is under way a websocket on process B attaches. For every event B receives
live (after its replay), the delay is B's arrival time minus A's arrival time of the same event
(both sockets are read in this one process, on one clock). Each run also checks that B got the
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
from tests.support.postgres import PostgresCluster, find_bin_dir  # noqa: E402


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
    # B: `attached`, then the replay (the tokens so far coalesced), then the live events, the same
    # texts as A's last ones: the longest common tail.
    pairs = []
    for x, y in zip(reversed(seen_a), reversed(seen_b)):
        if x[0] != y[0]:
            break
        pairs.append((x, y))
    assert len(pairs) > 20, f"only {len(pairs)} events matched"
    assert _text(seen_b) == _text(seen_a), "the page on B did not get the answer exactly once, in order"
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
        with tempfile.TemporaryDirectory(prefix="bench-relay-") as tmp, \
                S.double_process(text_only=True, chunk_delay_s=args.chunk_ms / 1000, answer_tokens=args.tokens) as double:  # fmt: skip
            env = S.write_site(Path(tmp), {}, double.base_url)
            env |= {"SWITCHBOARD_DATABASE_URL": url, "SWITCHBOARD_SECRET_KEY": "bench-relay-key-0123456789abcdef"}
            with S.app_process(Path(tmp), env) as a, S.app_process(Path(tmp), env) as b:
                delays: list[float] = []
                for _ in range(args.turns):
                    delays += asyncio.run(_turn(a, b))
    finally:
        cluster.stop()
    figures = {"events": len(delays), "p50_ms": S.percentile(delays, 50), "p90_ms": S.percentile(delays, 90),
               "p99_ms": S.percentile(delays, 99), "max_ms": max(delays)}  # fmt: skip
    S.print_table(["events", "p50 ms", "p90 ms", "p99 ms", "max ms"],
                  [[figures["events"], figures["p50_ms"], figures["p90_ms"], figures["p99_ms"], figures["max_ms"]]])
    S.report("relay", figures, args, started, load_before)


if __name__ == "__main__":
    main()
