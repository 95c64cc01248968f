"""A long conversation: what the host adds to its turn 1, 60, 150, 400 and 1,000.

One conversation, one websocket, stored tool turns one after another (each: the double asks for
toolbox_echo, the app runs it, the double answers with text; four messages a turn). At each
checkpoint N, `--samples` turns N, N+1, ... are measured, each interleaved with its floor: a raw
fastmcp call to the toolbox plus the same two model requests the app sends at that turn (the whole
history so far) as bare httpx streams with `json.loads` per chunk, so a bigger request costs the
floor as much as the app. Host overhead = turn p50 - floor p50 (and the p50 of the per-turn
differences), with the app's CPU per measured turn. Turns between checkpoints are sent unmeasured.

`--postgres` stores in a throw-away PostgreSQL; `--app DIR` serves another checkout's app (its own
.venv), e.g. the commit before, to alternate runs with; `--profile FILE --profile-at N` runs the app
under cProfile (bench/_profiled.py) over checkpoint N's measured turns and prints where its event
loop's thread spends its CPU (that checkpoint's figures then include the profiler's cost).

    uv run python bench/long_conversation.py [--turns 1,60,150,400,1000] [--samples 15] [--postgres]
        [--app DIR] [--profile FILE --profile-at 400] [--json]
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import _support as S
import _turns as T

TARGET_RATIO = 1.5  # overhead at turns 400 and 1,000: at most 1.5x turn 1's


async def run(args: Any) -> dict[str, Any]:
    with T.site("bench-longconv-", postgres=args.postgres) as site:
        return await _measure(args, site)


async def _measure(args: Any, site: T.Site) -> dict[str, Any]:
    import httpx
    import websockets

    python = str(Path(args.app).resolve() / ".venv" / "bin" / "python") if args.app else sys.executable
    profiler = T.Profiler(args.profile, python)
    checkpoints = sorted(int(x) for x in args.turns.split(","))
    measured = {cp + i: cp for cp in checkpoints for i in range(args.samples)}
    command = profiler.command or [python, "-m", "switchboard"]
    with S.app_process(site.folder, profiler.env(site.env), command=command) as app:
        async with httpx.AsyncClient() as http:
            tools = T.openai_tools((await http.get(f"{app.base}/api/config")).json())
        raw_http = T.HttpFloor(site.double_url, tools)
        series: dict[int, dict[str, list[float]]] = {cp: {"c": [], "floor": [], "cpu": []} for cp in checkpoints}
        async with T.raw_toolbox(site.folder) as mcp, websockets.connect(app.ws_url, max_size=2**26) as ws:
            await ws.recv()  # the session event

            async def floor(turn: int) -> float:
                first, second = T.turn_messages(turn)
                start = time.perf_counter()
                assert not (await mcp.call_tool_mcp("echo", {"text": "hello"})).is_error
                tool_s = time.perf_counter() - start
                return tool_s + (await raw_http(first))[0] + (await raw_http(second))[0]

            for _ in range(args.warmup):  # the app's first turns, in conversations of their own
                await S.ws_turn(ws, T.USER_TEXT, conversation_id=secrets.token_hex(6))
                await floor(1)
            conversation = secrets.token_hex(8)
            for turn in range(1, max(measured) + 1):
                cp = measured.get(turn)
                if cp is not None:
                    if cp == args.profile_at and turn == cp:
                        profiler.start(app.pid)
                    series[cp]["floor"].append(await floor(turn) * 1000)
                    cpu = S.proc_cpu_s(app.pid)
                seconds, events = await S.ws_turn(ws, T.USER_TEXT, conversation_id=conversation)
                if not S.turn_ok(events):
                    raise RuntimeError(f"turn {turn} failed: {events[-3:]}")
                if cp is not None:
                    series[cp]["c"].append(seconds * 1000)
                    series[cp]["cpu"].append((S.proc_cpu_s(app.pid) - cpu) * 1000)
                    if cp == args.profile_at and turn == cp + args.samples - 1:
                        await profiler.stop(app.pid)
        await raw_http.aclose()

    out: dict[str, Any] = {"samples": args.samples, "checkpoints": {}}
    for cp, s in series.items():
        paired = [c - f for c, f in zip(s["c"], s["floor"], strict=True)]
        out["checkpoints"][cp] = {
            "turn_p50_ms": S.percentile(s["c"], 50),
            "floor_p50_ms": S.percentile(s["floor"], 50),
            "overhead_p50_ms": S.percentile(s["c"], 50) - S.percentile(s["floor"], 50),
            "overhead_paired_p50_ms": S.percentile(paired, 50),
            "app_cpu_p50_ms": S.percentile(s["cpu"], 50),
        }
    return out


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--turns", default="1,60,150,400,1000", help="checkpoints: turns of the conversation to measure")
    p.add_argument("--samples", type=int, default=15, help="turns measured from each checkpoint on")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--postgres", action="store_true", help="store in a throw-away PostgreSQL")
    p.add_argument("--app", metavar="DIR", help="serve this checkout's app (with its own .venv) instead")
    p.add_argument("--profile", metavar="FILE", help="cProfile the app over one checkpoint's turns; stats to FILE")
    p.add_argument("--profile-at", type=int, default=400, help="the checkpoint to profile")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    cps = data["checkpoints"]
    first = cps[min(cps)]["overhead_paired_p50_ms"]
    print(
        f"One conversation, {'PostgreSQL' if args.postgres else 'SQLite'}, {args.samples} turns measured from "
        f"each checkpoint on{' (app of ' + args.app + ')' if args.app else ''}\n"
    )
    S.print_table(
        ["turn", "turn p50 ms", "floor p50 ms", "overhead p50 ms", "paired p50 ms", "x turn 1", "app CPU p50 ms"],
        [
            [
                cp,
                v["turn_p50_ms"],
                v["floor_p50_ms"],
                v["overhead_p50_ms"],
                v["overhead_paired_p50_ms"],
                f"{v['overhead_paired_p50_ms'] / first:.2f}" if first > 0 else "",
                v["app_cpu_p50_ms"],
            ]
            for cp, v in cps.items()
        ],
    )
    print(f"target: overhead at turns 400 and 1,000 at most {TARGET_RATIO}x turn 1's (paired p50)")
    if args.profile:
        import pstats

        print(f"\nThe app's event-loop thread under cProfile at turn {args.profile_at}, by cumulative time:")
        pstats.Stats(args.profile).sort_stats("cumulative").print_stats(45)
    S.report("long_conversation", data, args, started, load)


if __name__ == "__main__":
    main()
