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
import json
import os
import secrets
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S
from _double import ANSWER
from overhead import USER_TEXT, _openai_tools, _tool_result_text

TARGET_RATIO = 1.5  # overhead at turns 400 and 1,000: at most 1.5x turn 1's


def _turn_messages(turn: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The two requests the app sends at turn `turn` (1-based): the history of the turns before,
    then the question (first call) and the tool call with its result (second call)."""
    history: list[dict[str, Any]] = [{"role": "system", "content": S.SYSTEM_PROMPT}]
    for n in range(turn):
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "toolbox_echo", "arguments": '{"text": "hello"}'},
        }
        history += [
            {"role": "user", "content": USER_TEXT},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": _tool_result_text("hello")},
        ]
        if n < turn - 1:
            history.append({"role": "assistant", "content": ANSWER})
    return history[:-2], history


async def run(args: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-longconv-") as tmp, S.double_process() as double:
        folder = Path(tmp)
        env = S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url)
        cluster = None
        if args.postgres:
            from tests.support.postgres import PostgresCluster, find_bin_dir

            cluster = PostgresCluster(find_bin_dir())
            cluster.start()
            env["SWITCHBOARD_DATABASE_URL"] = cluster.create_database()
        try:
            return await _measure(args, folder, env, double.base_url)
        finally:
            if cluster is not None:
                cluster.stop()


async def _measure(args: Any, folder: Path, env: dict[str, str], double_url: str) -> dict[str, Any]:
    import httpx
    import websockets
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    python = str(Path(args.app).resolve() / ".venv" / "bin" / "python") if args.app else sys.executable
    command = [python, "-m", "switchboard"]
    if args.profile:
        env = {**env, "BENCH_PROFILE_OUT": str(Path(args.profile).resolve())}
        command = [python, str(Path(__file__).with_name("_profiled.py"))]
    checkpoints = sorted(int(x) for x in args.turns.split(","))
    measured = {cp + i: cp for cp in checkpoints for i in range(args.samples)}
    with S.app_process(folder, env, command=command) as app:
        async with httpx.AsyncClient() as http:
            tools = _openai_tools((await http.get(f"{app.base}/api/config")).json())
        floor_http = httpx.AsyncClient()

        async def raw_http(messages: list[dict[str, Any]]) -> float:
            body = {"model": "double", "messages": messages, "tools": tools, "stream": True}
            body["stream_options"] = {"include_usage": True}
            start = time.perf_counter()
            async with floor_http.stream(
                "POST", f"{double_url}/chat/completions", json=body, headers={"authorization": "Bearer k"}
            ) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        json.loads(line[6:])
            return time.perf_counter() - start

        transport = StdioTransport(
            command=sys.executable, args=[str(S.TOOLBOX)], keep_alive=False, log_file=folder / "raw-toolbox.stderr.log"
        )
        series: dict[int, dict[str, list[float]]] = {cp: {"c": [], "floor": [], "cpu": []} for cp in checkpoints}
        async with Client(transport) as mcp, websockets.connect(app.ws_url, max_size=2**26) as ws:
            await ws.recv()  # the session event

            async def floor(turn: int) -> float:
                first, second = _turn_messages(turn)
                start = time.perf_counter()
                assert not (await mcp.call_tool_mcp("echo", {"text": "hello"})).is_error
                tool_s = time.perf_counter() - start
                return tool_s + await raw_http(first) + await raw_http(second)

            for _ in range(args.warmup):  # the app's first turns, in conversations of their own
                await S.ws_turn(ws, USER_TEXT, conversation_id=secrets.token_hex(6))
                await floor(1)
            conversation = secrets.token_hex(8)
            for turn in range(1, max(measured) + 1):
                cp = measured.get(turn)
                if cp is not None:
                    if args.profile and cp == args.profile_at and turn == cp:
                        os.kill(app.pid, signal.SIGUSR1)
                    series[cp]["floor"].append(await floor(turn) * 1000)
                    cpu = S.proc_cpu_s(app.pid)
                seconds, events = await S.ws_turn(ws, USER_TEXT, conversation_id=conversation)
                if not S.turn_ok(events):
                    raise RuntimeError(f"turn {turn} failed: {events[-3:]}")
                if cp is not None:
                    series[cp]["c"].append(seconds * 1000)
                    series[cp]["cpu"].append((S.proc_cpu_s(app.pid) - cpu) * 1000)
                    if args.profile and cp == args.profile_at and turn == cp + args.samples - 1:
                        os.kill(app.pid, signal.SIGUSR2)
                        for _ in range(100):
                            if Path(args.profile).exists():
                                break
                            await asyncio.sleep(0.1)
        await floor_http.aclose()

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
