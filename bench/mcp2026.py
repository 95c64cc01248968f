"""MCP 2026-07-28 against 2025-11-25 on the same server (tests/support/servers/eras.py over
stdio, `--era any` and `--era 2025`): the host's CPU per tool call (this process: the MCP
client stack, the pool and result parsing; the server runs in its own process). And the
requests cache hints save: a 20-turn conversation that attaches the same resource each turn
(tests/support/servers/listening.py with and without `ttlMs`), counted by the server.

    uv run python bench/mcp2026.py [--calls 300] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from switchboard.config.loader import McpConfig  # noqa: E402
from switchboard.config.models import ServerConfig  # noqa: E402
from switchboard.tools import ServerPool  # noqa: E402
from tests.support.sinks import Sink  # noqa: E402

SERVERS = ROOT / "tests" / "support" / "servers"


def _pool(servers: dict[str, list[str]], log_dir: Path) -> ServerPool:
    configs = {name: ServerConfig(command=sys.executable, args=args) for name, args in servers.items()}
    return ServerPool(McpConfig(servers=configs), project_root=ROOT, log_dir=log_dir)


async def cpu_per_call(calls: int, rounds: int, log_dir: Path) -> dict[str, object]:
    pool = _pool(
        {"modern": [str(SERVERS / "eras.py"), "--era", "any"], "legacy": [str(SERVERS / "eras.py"), "--era", "2025"]},
        log_dir,
    )
    pool.start()
    try:
        await pool.wait_settled(60)
        versions = {s.name: s.protocol_version for s in pool.statuses()}
        tools = {t.server: t for t in pool.registry.all() if t.name == "era"}
        best: dict[str, float] = {}
        for _ in range(rounds):  # interleaved, best of the rounds (a shared machine)
            for server in ("modern", "legacy"):
                for _ in range(20):  # warm up
                    await pool.call(tools[server], {}, Sink())
                cpu, wall = time.process_time(), time.perf_counter()
                for _ in range(calls):
                    await pool.call(tools[server], {}, Sink())
                per_call = (time.process_time() - cpu) / calls * 1000
                best[server] = min(best.get(server, per_call), per_call)
                best[f"{server}_wall"] = min(
                    best.get(f"{server}_wall", 1e9), (time.perf_counter() - wall) / calls * 1000
                )
        return {
            "versions": versions,
            "cpu_ms_per_call": {k: round(v, 3) for k, v in best.items() if "wall" not in k},
            "wall_ms_per_call": {k.removesuffix("_wall"): round(v, 3) for k, v in best.items() if "wall" in k},
        }
    finally:
        await pool.stop()


async def reads_saved(turns: int, log_dir: Path) -> dict[str, int]:
    pool = _pool(
        {
            "hinted": [str(SERVERS / "listening.py"), "--scope", "public"],
            "plain": [str(SERVERS / "listening.py"), "--ttl-ms", "0"],
        },
        log_dir,
    )
    pool.start()
    try:
        await pool.wait_settled(60)
        last: dict[str, str] = {}
        for _ in range(turns):
            for server in ("hinted", "plain"):
                [artifact] = await pool.read_resource(server, "data://counter", user="bench@example.com")
                last[server] = artifact.data.decode()
        # the counter says how many reads reached the server
        return {server: int(text.split()[-1]) for server, text in last.items()}
    finally:
        await pool.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        cpu = asyncio.run(cpu_per_call(args.calls, args.rounds, Path(tmp)))
        reads = asyncio.run(reads_saved(args.turns, Path(tmp)))
    print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    if args.json:
        print(json.dumps({"cpu": cpu, "reads": reads}, indent=2))
        return
    print(f"{'server':10} {'protocol':12} {'host CPU ms/call':>17} {'wall ms/call':>13}")
    for server in ("modern", "legacy"):
        print(
            f"{server:10} {cpu['versions'][server]:12} {cpu['cpu_ms_per_call'][server]:>17} {cpu['wall_ms_per_call'][server]:>13}"
        )
    print(f"\n{args.turns} turns attaching the same resource: reads that reached the server")
    print(f"  with cache hints (ttlMs 60 s, public): {reads['hinted']}")
    print(f"  without hints:                         {reads['plain']}")
    print(f"  requests saved: {reads['plain'] - reads['hinted']} of {reads['plain']}")


if __name__ == "__main__":
    main()
