"""Concurrency: N websocket sessions at once (default 1, 10, 50 and 200; e.g.
`--sessions 1,1000`), each doing 5 turns with one tool call (the double asks
for toolbox_echo, then answers).

Each level gets a fresh app process (`switchboard serve`, so its peak RSS,
VmHWM from /proc, is that level's alone: it includes the app's own start-up
and litellm, which every level shares). The LLM double runs in its own
process; the clients run in `--clients` processes of their own
(bench/_ws_clients.py), one user per session through the proxy identity
header. Per row, CPU ms/turn and "cores" are given apart for the app, its
toolbox server, the double and the clients. `--raised-at N` adds a run with
`tool_concurrency_per_server` raised from 4 to 64.

With no delays the double answers at once, so a turn is nothing but CPU and
the benchmark measures throughput: N sessions queue for the app's core(s).
`--response-delay` / `--chunk-delay` give the double a real provider's pace
(time to first token, time between chunks), which is how a team's sessions
actually overlap; `--workers N` runs N app processes (SWITCHBOARD_WORKERS; on PostgreSQL,
as the app refuses several on SQLite); `--postgres` puts the store on a throw-away PostgreSQL server.

    uv run python bench/concurrency.py [--sessions 1,10,50,200] [--workers 1] [--clients 1]
        [--response-delay 0] [--chunk-delay 0] [--postgres] [--profile DIR] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

TURNS_PER_SESSION = 5
PROXY_SECRET = "bench-proxy-secret"


def _app_pids(app: S.App, workers: int) -> list[int]:
    """The processes that run the app: the server itself, or uvicorn's worker processes."""
    return [app.pid] if workers == 1 else S.children(app.pid)


async def _warm_up(app: S.App, connections: int, headers: dict[str, str]) -> None:
    """litellm loads in the background at start-up: two turns on each of a few connections
    (with several workers, the kernel spreads the connections over them)."""
    import websockets

    async def one() -> None:
        async with websockets.connect(app.ws_url, additional_headers=headers) as ws:
            await ws.recv()
            for _ in range(2):
                await S.ws_turn(ws, "warm up", conversation_id=secrets.token_hex(6))

    await asyncio.gather(*(one() for _ in range(connections)))


def _start_clients(app: S.App, sessions: int, args: Any) -> list[subprocess.Popen[bytes]]:
    """`--clients` processes (bench/_ws_clients.py), the sessions split between them."""
    count = max(1, min(args.clients, sessions))
    shares = [sessions // count + (1 if n < sessions % count else 0) for n in range(count)]
    procs, first = [], 0
    for share in shares:
        argv = [
            sys.executable,
            str(S.BENCH_DIR / "_ws_clients.py"),
            "--url",
            app.ws_url,
            "--sessions",
            str(share),
            "--first",
            str(first),
            "--turns",
            str(TURNS_PER_SESSION),
            "--turn-timeout",
            str(args.turn_timeout),
            "--max-seconds",
            str(args.max_seconds),
        ]
        argv += [] if args.one_user else ["--proxy-secret", PROXY_SECRET]
        argv += ["--no-compression"] if args.no_compression else []
        procs.append(subprocess.Popen(argv, cwd=S.PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        first += share
    return procs


async def _read_json_line(proc: subprocess.Popen[bytes], timeout_s: float) -> dict[str, Any]:
    assert proc.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout_s)
    if not line:
        raise RuntimeError(f"a client process ended early (exit code {proc.wait()})")
    return json.loads(line)


def _cpu(app_pids: list[int], servers: list[int], double: S.Double, clients: list[int]) -> dict[str, float]:
    return {
        "app": sum(S.proc_cpu_s(pid) for pid in app_pids),
        "servers": sum(S.proc_cpu_s(pid) for pid in servers),
        "double": S.proc_cpu_s(double.pid),
        "clients": sum(S.proc_cpu_s(pid) for pid in clients),
    }


def _profiler(app_pids: list[int], sessions: int, args: Any) -> list[subprocess.Popen[bytes]]:
    """py-spy on each app process for the level's turns (`--profile DIR`)."""
    if not args.profile:
        return []
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy on PATH (e.g. `uv tool install py-spy`)")
    folder = Path(args.profile)
    folder.mkdir(parents=True, exist_ok=True)
    return [
        subprocess.Popen(
            [
                spy,
                "record",
                "--nonblocking",
                "-r",
                "100",
                "-f",
                "raw",
                "-p",
                str(pid),
                "-o",
                str(folder / f"app-{sessions}-sessions-{args.workers}w-{pid}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid in app_pids
    ]


async def _level(app: S.App, double: S.Double, sessions: int, args: Any) -> dict[str, Any]:
    headers = {} if args.one_user else {"X-User-Email": "bench-warm@example.com", "X-Proxy-Secret": PROXY_SECRET}
    await _warm_up(app, 1 if args.workers == 1 else 4 * args.workers, headers)
    app_pids = _app_pids(app, args.workers)
    rss_before = sum(S.proc_kib(pid) for pid in app_pids)
    clients = _start_clients(app, sessions, args)
    try:
        # Connect everyone first, then start every session's turns together.
        ready = [await _read_json_line(proc, args.max_seconds) for proc in clients]
        connected = sum(r["connected"] for r in ready)
        rss_connected = sum(S.proc_kib(pid) for pid in app_pids)
        servers = [child for pid in app_pids for child in S.children(pid)]
        spies = _profiler(app_pids, sessions, args)
        client_pids = [proc.pid for proc in clients]
        cpu_before = _cpu(app_pids, servers, double, client_pids)
        # The clients' CPU is read just before they print their results (they then exit).
        done, wall = await _go(clients, args.max_seconds + 60)
        cpu_after = _cpu(app_pids, servers, double, [])
        cpu_after["clients"] = sum(_exited_cpu_s(proc) for proc in clients)
        for spy in spies:
            spy.send_signal(signal.SIGINT)
            spy.wait(timeout=30)
    finally:
        for proc in clients:
            S.stop(proc)
    cpu = {k: cpu_after[k] - cpu_before[k] for k in cpu_before}
    latencies = [ms for r in done for ms in r["latencies_ms"]]
    errors = sum(r["errors"] for r in done)
    turns_ok = len(latencies)
    return {
        "sessions": sessions,
        "connected": connected,
        "turns_ok": turns_ok,
        "errors": errors,
        "unfinished": sessions * TURNS_PER_SESSION - turns_ok - errors,
        "error_samples": [e for r in done for e in r["error_samples"]][:5],
        "wall_s": wall,
        "turns_per_s": turns_ok / wall if wall else 0.0,
        "p50_ms": S.percentile(latencies, 50),
        "p99_ms": S.percentile(latencies, 99),
        "rss_idle_mib": rss_before / 1024,
        "rss_connected_mib": rss_connected / 1024,
        "rss_end_mib": sum(S.proc_kib(pid) for pid in app_pids) / 1024,
        "peak_rss_mib": sum(S.proc_kib(pid, "VmHWM") for pid in app_pids) / 1024,
        "cpu_busy": {k: v / wall for k, v in cpu.items()},  # cores used on average
        "cpu_ms_per_turn": {k: v * 1000 / max(1, turns_ok) for k, v in cpu.items()},
        "app_cpu_ms_per_turn": cpu["app"] * 1000 / max(1, turns_ok),
    }


async def _go(clients: list[subprocess.Popen[bytes]], timeout_s: float) -> tuple[list[dict[str, Any]], float]:
    """Start every waiting client at once; their results, and the wall time until the last."""
    began = time.perf_counter()
    for proc in clients:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
    done = [await _read_json_line(proc, timeout_s) for proc in clients]
    return done, time.perf_counter() - began


def _exited_cpu_s(proc: subprocess.Popen[bytes]) -> float:
    """All the CPU seconds of a client process that has printed its results (it exits then)."""
    assert proc.stdin is not None
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


async def run(args: Any) -> dict[str, Any]:
    levels = [int(x) for x in args.sessions.split(",")]
    runs: list[tuple[int, int]] = [(n, args.tool_limit) for n in levels]
    if args.raised_at:
        runs.append((args.raised_at, 64))
    results = []
    cluster = _postgres() if args.postgres or args.workers > 1 else None  # several workers need it
    try:
        return await _runs(args, runs, results, cluster)
    finally:
        if cluster is not None:
            cluster.stop()


def _postgres() -> Any:
    """A throw-away PostgreSQL server (tests/support/postgres.py), fsync on as in service."""
    from tests.support.postgres import PostgresCluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("--postgres needs PostgreSQL installed (apt-get install -y postgresql)")
    cluster = PostgresCluster(bin_dir, durable=True)
    cluster.start()
    return cluster


async def _runs(args: Any, runs: list[tuple[int, int]], results: list[dict[str, Any]], cluster: Any) -> dict[str, Any]:
    with S.double_process(
        response_delay_s=args.response_delay,
        chunk_delay_s=args.chunk_delay,
        max_seconds=len(runs) * (args.max_seconds + 300),
    ) as double:
        for sessions, limit in runs:
            with tempfile.TemporaryDirectory(prefix="bench-concurrency-") as tmp:
                folder = Path(tmp)
                env = S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url)
                env["SWITCHBOARD_TOOL_CONCURRENCY_PER_SERVER"] = str(limit)
                env["SWITCHBOARD_WORKERS"] = str(args.workers)
                if not args.one_user:
                    env |= {"SWITCHBOARD_AUTH_MODE": "proxy", "SWITCHBOARD_PROXY_SECRET": PROXY_SECRET}
                if cluster is not None:
                    env["SWITCHBOARD_DATABASE_URL"] = cluster.create_database()
                with S.app_process(folder, env) as app:
                    result = await _level(app, double, sessions, args)
            result["tool_concurrency_per_server"] = limit
            results.append(result)
            print(
                f"  {sessions} sessions (tool limit {limit}): {result['turns_per_s']:.1f} turns/s, "
                f"p50 {result['p50_ms']:.0f} ms, errors {result['errors']}",
                flush=True,
            )
    return {
        "turns_per_session": TURNS_PER_SESSION,
        "workers": args.workers,
        "response_delay_s": args.response_delay,
        "chunk_delay_s": args.chunk_delay,
        "clients": args.clients,
        "one_user": args.one_user,
        "store": "postgres" if cluster is not None else "sqlite",
        "levels": results,
    }


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument(
        "--sessions",
        "--levels",
        dest="sessions",
        default="1,10,50,200",
        help="comma-separated session counts, one fresh app per count (e.g. 1,1000)",
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=240.0,
        help="limit for one level's turns; turns still running then are counted as cut off",
    )
    p.add_argument("--turn-timeout", type=float, default=600.0, help="a client gives up on one turn after this long")
    p.add_argument(
        "--raised-at",
        type=int,
        default=0,
        help="sessions for an extra run with tool_concurrency_per_server=64 (default 0: none)",
    )
    p.add_argument("--tool-limit", type=int, default=4, help="tool_concurrency_per_server (the app's default is 4)")
    p.add_argument("--workers", type=int, default=1, help="app processes (SWITCHBOARD_WORKERS)")
    p.add_argument("--clients", type=int, default=1, help="client processes the sessions are split between")
    p.add_argument("--one-user", action="store_true", help="every session is the dev user (default: one user each)")
    p.add_argument("--no-compression", action="store_true", help="clients do not ask for permessage-deflate")
    p.add_argument("--postgres", action="store_true", help="the conversation store on a throw-away PostgreSQL server")
    p.add_argument("--profile", metavar="DIR", help="py-spy each app process during the turns; raw stacks to DIR")
    p.add_argument("--response-delay", type=float, default=0.0, help="the double's seconds before its first chunk")
    p.add_argument("--chunk-delay", type=float, default=0.0, help="the double's seconds between chunks")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    rows = []
    for r in data["levels"]:
        busy, per = r["cpu_busy"], r["cpu_ms_per_turn"]
        rows.append(
            [
                r["sessions"],
                r["connected"],
                r["tool_concurrency_per_server"],
                r["turns_ok"],
                r["errors"],
                r["unfinished"],
                r["turns_per_s"],
                r["p50_ms"],
                r["p99_ms"],
                f"{per['app']:.1f}/{per['servers']:.1f}/{per['double']:.1f}/{per['clients']:.1f}",
                f"{busy['app']:.2f}/{busy['servers']:.2f}/{busy['double']:.2f}/{busy['clients']:.2f}",
                r["rss_idle_mib"],
                r["rss_connected_mib"],
                r["peak_rss_mib"],
            ]
        )
    print(
        f"\nConcurrency: each session does {TURNS_PER_SESSION} turns with one tool call; {args.workers} app "
        f"process(es); {args.clients} client process(es); {'one user' if args.one_user else 'one user per session'}; "
        f"store {data['store']}; "
        f"the double waits {args.response_delay * 1000:.0f} ms before its first chunk and "
        f"{args.chunk_delay * 1000:.0f} ms between chunks\n"
    )
    S.print_table(
        [
            "sessions",
            "connected",
            "tool limit",
            "turns ok",
            "errors",
            "cut off",
            "turns/s",
            "p50 ms",
            "p99 ms",
            "CPU ms/turn app/toolbox/double/clients",
            "cores app/toolbox/double/clients",
            "RSS idle MiB",
            "RSS connected MiB",
            "peak RSS MiB",
        ],
        rows,
    )
    by = {(r["sessions"], r["tool_concurrency_per_server"]): r for r in data["levels"]}
    one = by.get((1, args.tool_limit))
    for (sessions, limit), r in sorted(by.items()):
        if one is None or sessions == 1 or limit != args.tool_limit:
            continue
        ratio = r["p50_ms"] / one["p50_ms"]
        data[f"p50_ratio_{sessions}_vs_1"] = ratio
        print(
            f"\np50 at {sessions} sessions / p50 at 1 session = {ratio:.2f}x; errors {r['errors']}, "
            f"cut off {r['unfinished']}"
            + (
                " (target at 1,000: <= 1.5x and 0 errors: "
                f"{'ok' if ratio <= 1.5 and not r['errors'] and not r['unfinished'] else 'MISSED'})"
                if sessions == 1000
                else ""
            )
        )
    for r in data["levels"]:
        for sample in r["error_samples"]:
            print(f"  error sample ({r['sessions']} sessions): {sample[:300]}")
    print("cut off: turns not finished within --max-seconds (this benchmark's bound, not an app error).")
    print("CPU ms/turn: each process group's CPU over the level's turns divided by the turns that succeeded.")
    print("Peak RSS is the app processes' VmHWM (/proc/PID/status), summed over workers: fresh processes per row.")
    S.report("concurrency", data, args, started, load)


if __name__ == "__main__":
    main()
