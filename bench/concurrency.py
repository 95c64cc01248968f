"""Concurrency: 1, 10, 50 and 200 websocket sessions at once, each doing 5
turns with one tool call (the double asks for toolbox_echo, then answers).

Each level gets a fresh app process (`switchboard serve`, so its peak RSS,
VmHWM from /proc, is that level's alone: it includes the app's own start-up
and litellm, which every level shares). The LLM double runs in its own
process with no delays; the clients run in this process. A last run repeats
the 50-session level with `tool_concurrency_per_server` raised from 4 to 64 to
show whether that limit is the bottleneck. Per row, "cores" is the CPU time
each process used divided by the level's wall time (app, its toolbox
server, the double, and the clients in this process).

With no delays the double answers at once, so a turn is nothing but CPU and
the benchmark measures throughput: N sessions queue for the app's core(s).
`--response-delay` / `--chunk-delay` give the double a real provider's pace
(time to first token, time between chunks), which is how a team's sessions
actually overlap; `--workers N` runs N app processes (SWITCHBOARD_WORKERS).

    uv run python bench/concurrency.py [--levels 1,10,50,200] [--workers 1]
        [--response-delay 0] [--chunk-delay 0] [--json]
"""

from __future__ import annotations

import asyncio
import os
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

TURNS_PER_SESSION = 5


async def _session(url: str, turns: int, connected: list[int], start: asyncio.Event, latencies: list[float],
                   errors: list[str]) -> None:  # fmt: skip
    import websockets

    try:
        async with websockets.connect(url, max_size=2**24, open_timeout=60) as ws:
            await asyncio.wait_for(ws.recv(), 60)  # the session event
            connected.append(1)
            await start.wait()
            for n in range(turns):
                seconds, events = await S.ws_turn(ws, f"turn {n}: echo hello", conversation_id=secrets.token_hex(6))
                if S.turn_ok(events):
                    latencies.append(seconds * 1000)
                else:
                    errors.append(f"bad turn: {[e['type'] for e in events][-4:]} {events[-1]}")
    except Exception as exc:  # noqa: BLE001 - every failure is a counted error
        errors.append(f"{type(exc).__name__}: {exc}")


def _app_pids(app: S.App, workers: int) -> list[int]:
    """The processes that run the app: the server itself, or uvicorn's worker processes."""
    return [app.pid] if workers == 1 else S.children(app.pid)


async def _warm_up(app: S.App, connections: int) -> None:
    """litellm loads in the background at start-up: two turns on each of a few connections
    (with several workers, the kernel spreads the connections over them)."""
    import websockets

    async def one() -> None:
        async with websockets.connect(app.ws_url) as ws:
            await ws.recv()
            for _ in range(2):
                await S.ws_turn(ws, "warm up", conversation_id=secrets.token_hex(6))

    await asyncio.gather(*(one() for _ in range(connections)))


async def _level(app: S.App, double: S.Double, sessions: int, turns: int, max_seconds: float,
                 workers: int) -> dict[str, Any]:  # fmt: skip
    await _warm_up(app, 1 if workers == 1 else 4 * workers)
    app_pids = _app_pids(app, workers)
    rss_before = sum(S.proc_kib(pid) for pid in app_pids)
    latencies: list[float] = []
    errors: list[str] = []
    start = asyncio.Event()
    connected: list[int] = []
    tasks = [asyncio.create_task(_session(app.ws_url, turns, connected, start, latencies, errors))
             for _ in range(sessions)]  # fmt: skip
    # Connect everyone first (bounded), then start every session's turns together.
    connect_deadline = time.monotonic() + 60
    while time.monotonic() < connect_deadline and len(connected) + sum(t.done() for t in tasks) < sessions:
        await asyncio.sleep(0.02)
    servers = [child for pid in app_pids for child in S.children(pid)]
    cpu_before = {"app": sum(S.proc_cpu_s(pid) for pid in app_pids), "double": S.proc_cpu_s(double.pid), "clients": time.process_time(),
                  "servers": sum(S.proc_cpu_s(pid) for pid in servers)}  # fmt: skip
    began = time.perf_counter()
    start.set()
    _, pending = await asyncio.wait(tasks, timeout=max_seconds)
    wall = time.perf_counter() - began
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    unfinished = sessions * turns - len(latencies) - len(errors)  # cut off by this benchmark's time limit
    cpu = {
        "app": sum(S.proc_cpu_s(pid) for pid in app_pids) - cpu_before["app"],
        "double": S.proc_cpu_s(double.pid) - cpu_before["double"],
        "clients": time.process_time() - cpu_before["clients"],
        "servers": sum(S.proc_cpu_s(pid) for pid in servers) - cpu_before["servers"],
    }
    return {
        "sessions": sessions,
        "turns_ok": len(latencies),
        "errors": len(errors),
        "unfinished": unfinished,
        "error_samples": errors[:3],
        "wall_s": wall,
        "turns_per_s": len(latencies) / wall if wall else 0.0,
        "p50_ms": S.percentile(latencies, 50),
        "p99_ms": S.percentile(latencies, 99),
        "rss_idle_mib": rss_before / 1024,
        "rss_end_mib": sum(S.proc_kib(pid) for pid in app_pids) / 1024,
        "peak_rss_mib": sum(S.proc_kib(pid, "VmHWM") for pid in app_pids) / 1024,
        "cpu_busy": {k: v / wall for k, v in cpu.items()},  # cores used on average
        "app_cpu_ms_per_turn": cpu["app"] * 1000 / max(1, len(latencies)),
    }


async def run(args: Any) -> dict[str, Any]:
    levels = [int(x) for x in args.levels.split(",")]
    runs: list[tuple[int, int]] = [(n, 4) for n in levels]
    if args.raised_at:
        runs.append((args.raised_at, 64))
    results = []
    with S.double_process(response_delay_s=args.response_delay, chunk_delay_s=args.chunk_delay) as double:
        for sessions, limit in runs:
            with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
                folder = Path(tmp)
                env = S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url)
                env["SWITCHBOARD_TOOL_CONCURRENCY_PER_SERVER"] = str(limit)
                env["SWITCHBOARD_WORKERS"] = str(args.workers)
                with S.app_process(folder, env) as app:
                    result = await _level(app, double, sessions, TURNS_PER_SESSION, args.max_seconds, args.workers)
            result["tool_concurrency_per_server"] = limit
            results.append(result)
            print(f"  {sessions} sessions (tool limit {limit}): {result['turns_per_s']:.1f} turns/s, "
                  f"p50 {result['p50_ms']:.0f} ms, errors {result['errors']}", flush=True)  # fmt: skip
    return {"turns_per_session": TURNS_PER_SESSION, "workers": args.workers, "response_delay_s": args.response_delay,
            "chunk_delay_s": args.chunk_delay, "levels": results}  # fmt: skip


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--levels", default="1,10,50,200")
    p.add_argument("--max-seconds", type=float, default=240.0,
                   help="limit for one level's turns; turns still running then are counted as cut off")  # fmt: skip
    p.add_argument("--raised-at", type=int, default=50,
                   help="sessions for the extra run with tool_concurrency_per_server=64 (0: skip it)")  # fmt: skip
    p.add_argument("--workers", type=int, default=1, help="app processes (SWITCHBOARD_WORKERS)")
    p.add_argument("--response-delay", type=float, default=0.0, help="the double's seconds before its first chunk")
    p.add_argument("--chunk-delay", type=float, default=0.0, help="the double's seconds between chunks")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    rows = []
    for r in data["levels"]:
        busy = r["cpu_busy"]
        rows.append([r["sessions"], r["tool_concurrency_per_server"], r["turns_ok"], r["errors"], r["unfinished"],
                     r["turns_per_s"],
                     r["p50_ms"], r["p99_ms"], r["app_cpu_ms_per_turn"], r["rss_idle_mib"], r["peak_rss_mib"],
                     f"{busy['app']:.2f}/{busy['servers']:.2f}/{busy['double']:.2f}/{busy['clients']:.2f}"])  # fmt: skip
    print(f"\nConcurrency: each session does {TURNS_PER_SESSION} turns with one tool call; {args.workers} app "
          f"process(es); the double waits {args.response_delay * 1000:.0f} ms before its first chunk and "
          f"{args.chunk_delay * 1000:.0f} ms between chunks\n")
    S.print_table(["sessions", "tool limit", "turns ok", "errors", "cut off", "turns/s", "p50 ms", "p99 ms",
                   "app CPU ms/turn", "RSS idle MiB", "peak RSS MiB", "cores app/toolbox/double/clients"], rows)  # fmt: skip
    by = {(r["sessions"], r["tool_concurrency_per_server"]): r for r in data["levels"]}
    if (1, 4) in by and (50, 4) in by:
        ratio = by[(50, 4)]["p50_ms"] / by[(1, 4)]["p50_ms"]
        data["p50_ratio_50_vs_1"] = ratio
        print(f"\np50 at 50 sessions / p50 at 1 session = {ratio:.1f}x (target <= 2x: {'ok' if ratio <= 2 else 'MISSED'})")
    if (200, 4) in by:
        errs, cut = by[(200, 4)]["errors"], by[(200, 4)]["unfinished"]
        verdict = "MISSED" if errs else ("ok" if not cut else "not all turns finished in time; raise --max-seconds")
        print(f"errors at 200 sessions: {errs}, turns cut off: {cut} (target 0 errors: {verdict})")
    for r in data["levels"]:
        for sample in r["error_samples"]:
            print(f"  error sample ({r['sessions']} sessions): {sample[:300]}")
    print("cut off: turns not finished within --max-seconds (this benchmark's bound, not an app error).")
    print("Peak RSS is the app processes' VmHWM (/proc/PID/status), summed over workers: fresh processes per row.")
    S.report("concurrency", data, args, started, load)


if __name__ == "__main__":
    main()
