"""Replicas: turns/s and p50 with N app processes behind nginx (round robin, no stickiness) on
one PostgreSQL, at 50 and 1,000 websocket sessions (default `--replicas 1,2,3`).

The deployment of docs/scale.md on one host, built by the tests' cluster harness
(tests/support/cluster.py): `switchboard serve` processes on a throw-away PostgreSQL and one data
dir, nginx in front. Each session (one user each, through the proxy identity header) does 5 turns
with one tool call; the LLM double answers at once (`--response-delay` for a provider's pace), so
a turn is CPU only and the figure is throughput. Clients run in processes of their own
(bench/_ws_clients.py). CPU per turn is given for the app processes, their toolbox servers,
PostgreSQL, nginx, the double and the clients: on this machine they all share the same cores.

    uv run python bench/cluster.py [--replicas 1,2,3] [--sessions 50,1000] [--clients 2] [--json]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S
from concurrency import PROXY_SECRET, TURNS_PER_SESSION, _exited_cpu_s, _go, _read_json_line, _start_clients, _warm_up

sys.path.insert(0, str(S.PROJECT_ROOT))
from tests.support.cluster import running_cluster
from tests.support.postgres import PostgresCluster, find_bin_dir

PARTS = ("app", "toolbox", "postgres", "nginx", "double", "clients")


class _Front:
    """What `_start_clients` and `_warm_up` need of an app: its websocket URL (nginx's)."""

    def __init__(self, base: str) -> None:
        self.ws_url = base.replace("http://", "ws://") + "/ws"


def _groups(cluster: Any, postgres: PostgresCluster, double: S.Double) -> dict[str, list[int]]:
    """The processes of each part, now (Postgres starts a backend per new connection)."""
    apps = [proc.pid for proc in cluster.procs if proc is not None]
    postmaster = int((postgres.dir / "data" / "postmaster.pid").read_text().split()[0])
    nginx = int((cluster.folder / "nginx" / "nginx.pid").read_text().split()[0])
    return {
        "app": apps,
        "toolbox": [child for pid in apps for child in S.children(pid)],
        "postgres": [postmaster, *S.children(postmaster)],
        "nginx": [nginx, *S.children(nginx)],
        "double": [double.pid],
    }


def _cpu(groups: dict[str, list[int]]) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for name, pids in groups.items():
        out[name] = {}
        for pid in pids:
            try:
                out[name][pid] = S.proc_cpu_s(pid)
            except OSError:
                continue  # ended meanwhile
    return out


def _spent(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    """CPU seconds per part between the two readings (a process that started meanwhile counts whole)."""
    return {name: sum(s - before[name].get(pid, 0.0) for pid, s in pids.items()) for name, pids in after.items()}


async def _level(cluster: Any, postgres: PostgresCluster, double: S.Double, sessions: int, args: Any) -> dict[str, Any]:
    front = _Front(cluster.base)
    await _warm_up(front, 2 * len(cluster.procs), {"X-User-Email": "warm@example.com", "X-Proxy-Secret": PROXY_SECRET})  # type: ignore[arg-type]
    clients = _start_clients(front, sessions, args)  # type: ignore[arg-type]
    try:
        ready = [await _read_json_line(proc, args.max_seconds) for proc in clients]
        before = _cpu(_groups(cluster, postgres, double))
        done, wall = await _go(clients, args.max_seconds + 60)
        cpu = _spent(before, _cpu(_groups(cluster, postgres, double)))
        cpu["clients"] = sum(_exited_cpu_s(proc) for proc in clients)
    finally:
        for proc in clients:
            S.stop(proc)
    latencies = [ms for r in done for ms in r["latencies_ms"]]
    turns = len(latencies)
    return {
        "sessions": sessions,
        "connected": sum(r["connected"] for r in ready),
        "turns_ok": turns,
        "errors": sum(r["errors"] for r in done),
        "error_samples": [e for r in done for e in r["error_samples"]][:3],
        "wall_s": wall,
        "turns_per_s": turns / wall if wall else 0.0,
        "p50_ms": S.percentile(latencies, 50),
        "p99_ms": S.percentile(latencies, 99),
        "cpu_ms_per_turn": {k: v * 1000 / max(1, turns) for k, v in cpu.items()},
        "cores_busy": {k: v / wall for k, v in cpu.items()},
        "load": os.getloadavg()[0],
        "replicas": len(cluster.procs),
    }


async def run(args: Any) -> dict[str, Any]:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("needs PostgreSQL installed (apt-get install -y postgresql)")
    postgres = PostgresCluster(bin_dir, durable=True)
    postgres.start()
    results = []
    try:
        with S.double_process(response_delay_s=args.response_delay, max_seconds=3600) as double:
            for replicas in [int(x) for x in args.replicas.split(",")]:
                with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
                    folder = Path(tmp)
                    env = S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url)
                    env |= {"SWITCHBOARD_AUTH_MODE": "proxy", "SWITCHBOARD_PROXY_SECRET": PROXY_SECRET}
                    with running_cluster(
                        folder, postgres.create_database(), replicas=replicas, extra_env=env
                    ) as cluster:
                        for sessions in [int(x) for x in args.sessions.split(",")]:
                            result = await _level(cluster, postgres, double, sessions, args)
                            results.append(result)
                            print(
                                f"  {replicas} process(es), {sessions} sessions: {result['turns_per_s']:.1f} turns/s, "
                                f"p50 {result['p50_ms']:.0f} ms, errors {result['errors']}, "
                                f"load {result['load']:.1f}",
                                flush=True,
                            )
    finally:
        postgres.stop()
    return {"turns_per_session": TURNS_PER_SESSION, "response_delay_s": args.response_delay, "levels": results}


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--replicas", default="1,2,3", help="comma-separated app process counts, one cluster each")
    p.add_argument("--sessions", default="50,1000", help="comma-separated session counts per cluster")
    p.add_argument("--clients", type=int, default=2, help="client processes the sessions are split between")
    p.add_argument("--max-seconds", type=float, default=300.0, help="limit for one level's turns")
    p.add_argument("--turn-timeout", type=float, default=600.0, help="a client gives up on one turn after this long")
    p.add_argument("--response-delay", type=float, default=0.0, help="the double's seconds before its first chunk")
    args = p.parse_args()
    args.one_user, args.no_compression = False, False
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    rows = []
    for r in data["levels"]:
        per, busy = r["cpu_ms_per_turn"], r["cores_busy"]
        rows.append(
            [
                r["replicas"],
                r["sessions"],
                r["turns_ok"],
                r["errors"],
                r["turns_per_s"],
                r["p50_ms"],
                r["p99_ms"],
                "/".join(f"{per[k]:.1f}" for k in PARTS),
                "/".join(f"{busy[k]:.2f}" for k in PARTS),
                r["load"],
            ]
        )
    print(
        f"\nReplicas behind nginx on one PostgreSQL: {TURNS_PER_SESSION} tool turns per session, one user per "
        f"session, the double waits {args.response_delay * 1000:.0f} ms; {os.cpu_count()} cores\n"
    )
    S.print_table(
        [
            "processes",
            "sessions",
            "turns ok",
            "errors",
            "turns/s",
            "p50 ms",
            "p99 ms",
            "CPU ms/turn " + "/".join(PARTS),
            "cores " + "/".join(PARTS),
            "load",
        ],
        rows,
    )
    S.report("cluster", data, args, started, load)


if __name__ == "__main__":
    main()
