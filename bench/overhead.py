"""Per-round overhead: what one websocket turn through the host costs beyond
its raw parts.

In one run, interleaved turn by turn so that load from other processes falls
on every part alike:
  a   a raw fastmcp `Client.call_tool_mcp("echo")` to the toolbox over stdio
      (the client stays connected);
  b1  a raw `litellm.acompletion(stream=True)` to the HTTP LLM double that
      answers with a tool call, consumed fully;
  b2  the same, answered with text (the second call of a turn);
  d1, d2  the same two requests as a bare httpx stream with `json.loads` per
      chunk: the floor of any model client, which issue 24's targets name;
  e1, e2  the same as a bare aiohttp stream: the floor of the library the app's
      direct path sends with (its CPU per call is about a third of httpx's), so
      the CPU line also prints the app against a + e1 + e2;
  c   a full turn through the real app (`switchboard serve` in its own
      process, uvicorn, a real socket): the double asks for toolbox_echo, the
      app runs it, the double answers with text.
b1 and b2 send the same messages and tool definitions the app sends. Host
overhead = c - (a + b1 + b2) against litellm, and c - (a + d1 + d2) against
the floor: the percentile of c minus the same percentile of
a + b1 + b2 summed per iteration, at p50 and at p99; the percentiles of the
per-turn differences are printed too. The double runs in its own
process with no delays. Each turn starts a fresh conversation (a new
conversation_id on the same socket) so that every turn sends the same amount.
Each such conversation is stored (one conversation and four messages per
turn) in the embedded SQLite database, or in a throw-away PostgreSQL with
`--postgres`; `--incognito` stores nothing, which gives what storing adds.

With `--profile FILE` the app runs under cProfile (bench/_profiled.py) over the measured
turns, writes its stats to FILE and the functions of its event loop's thread that cost the
most are printed (the figures above then include the profiler's own cost).

    uv run python bench/overhead.py [--turns 300] [--no-litellm] [--postgres | --incognito] [--profile FILE] [--json]
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from typing import Any

import _support as S
import _turns as T

TARGET_P50_MS, TARGET_P99_MS = 3.0, 10.0  # host overhead over the floor: p50 at most 3 ms for a stored tool turn
TARGET_CPU_RATIO = 1.3  # the app's CPU per stored tool turn: at most 1.3x the floor's (a + d1 + d2)


async def run(args: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    import litellm

    litellm_import_s = time.perf_counter() - t0
    litellm.suppress_debug_info = True
    with T.site("bench-overhead-", postgres=args.postgres) as site:
        return await _measure(args, site, litellm, litellm_import_s)


async def _measure(args: Any, site: T.Site, litellm: Any, litellm_import_s: float) -> dict[str, Any]:
    import httpx
    import websockets

    double_url = site.double_url
    profiler = T.Profiler(args.profile)
    with S.app_process(site.folder, profiler.env(site.env), command=profiler.command) as app:
        async with httpx.AsyncClient() as http:
            config = (await http.get(f"{app.base}/api/config")).json()
        tools = T.openai_tools(config)
        first, second = T.turn_messages(1)  # the same two requests the app sends in a turn

        async def raw_llm(messages: list[dict[str, Any]]) -> tuple[float, float]:
            cpu, start = time.process_time(), time.perf_counter()
            response = await litellm.acompletion(
                model="openai/double",
                api_base=double_url,
                api_key="k",
                stream=True,
                messages=messages,
                tools=tools,
                stream_options={"include_usage": True},
                num_retries=0,
                max_retries=0,
            )
            async for _chunk in response:
                pass
            return time.perf_counter() - start, time.process_time() - cpu

        import json

        raw_http = T.HttpFloor(double_url, tools)

        import aiohttp

        floor_aiohttp = aiohttp.ClientSession()

        async def raw_aiohttp(messages: list[dict[str, Any]]) -> tuple[float, float]:
            cpu, start = time.process_time(), time.perf_counter()
            body = {
                "model": "double",
                "messages": messages,
                "tools": tools,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            async with floor_aiohttp.post(
                f"{double_url}/chat/completions", json=body, headers={"authorization": "Bearer k"}
            ) as response:
                async for line in response.content:
                    if line.startswith(b"data: {"):
                        json.loads(line[6:])
            return time.perf_counter() - start, time.process_time() - cpu

        async with T.raw_toolbox(site.folder) as mcp, websockets.connect(app.ws_url, max_size=2**24) as ws:
            await ws.recv()  # the session event

            async def raw_tool() -> tuple[float, float]:
                cpu, start = time.process_time(), time.perf_counter()
                result = await mcp.call_tool_mcp("echo", {"text": "hello"})
                assert not result.is_error
                return time.perf_counter() - start, time.process_time() - cpu

            async def turn() -> tuple[float, float, bool]:
                cpu = S.proc_cpu_s(app.pid)
                seconds, events = await S.ws_turn(
                    ws,
                    T.USER_TEXT,
                    conversation_id=secrets.token_hex(6),
                    **({"incognito": True} if args.incognito else {}),
                )
                return seconds, S.proc_cpu_s(app.pid) - cpu, S.turn_ok(events)

            for _ in range(args.warmup):
                await raw_tool(), await turn()
                if not args.no_litellm:
                    await raw_llm(first), await raw_llm(second)
                await raw_http(first), await raw_http(second)
                await raw_aiohttp(first), await raw_aiohttp(second)

            profiler.start(app.pid)
            pings = []
            for _ in range(50):  # the floor: one websocket round trip to the app process (ping/pong)
                start = time.perf_counter()
                await (await ws.ping())
                pings.append((time.perf_counter() - start) * 1000)

            series: dict[str, list[float]] = {k: [] for k in ("a", "b1", "b2", "d1", "d2", "e1", "e2", "c")}
            cpu = dict.fromkeys(("a", "b1", "b2", "d1", "d2", "e1", "e2", "c"), 0.0)
            failed = 0
            deadline = time.monotonic() + args.max_seconds
            app_cpu_start = S.proc_cpu_s(app.pid)
            while len(series["c"]) < args.turns and time.monotonic() < deadline:
                litellm_parts = () if args.no_litellm else (("b1", await raw_llm(first)), ("b2", await raw_llm(second)))
                for key, (wall, used) in (
                    ("a", await raw_tool()),
                    *litellm_parts,
                    ("d1", await raw_http(first)),
                    ("d2", await raw_http(second)),
                    ("e1", await raw_aiohttp(first)),
                    ("e2", await raw_aiohttp(second)),
                ):
                    series[key].append(wall * 1000)
                    cpu[key] += used
                wall, used, ok = await turn()
                series["c"].append(wall * 1000)
                cpu["c"] += used
                failed += not ok
            # What the app did between turns counts too (a turn's trailing work: the log thread, the
            # last writes, clean-up): the app's CPU over the whole loop, of which it idles in the rest.
            app_cpu_loop = S.proc_cpu_s(app.pid) - app_cpu_start
            await profiler.stop(app.pid)
        await raw_http.aclose()
        await floor_aiohttp.close()

    n = len(series["c"])
    if args.no_litellm:
        series["b1"] = series["b2"] = [0.0] * n
    stats = {
        k: {"p50": S.percentile(v, 50), "p99": S.percentile(v, 99), "mean": sum(v) / len(v), "min": min(v)}
        for k, v in series.items()
    }
    # The raw parts of one turn, summed per iteration: the distribution a turn would have
    # if the host added nothing (summing each part's p99 would overstate its tail).
    raw = [a + b1 + b2 for a, b1, b2 in zip(series["a"], series["b1"], series["b2"], strict=False)]
    stats["raw"] = {
        "p50": S.percentile(raw, 50),
        "p99": S.percentile(raw, 99),
        "mean": sum(raw) / len(raw),
        "min": min(raw),
    }
    overhead = {p: stats["c"][p] - stats["raw"][p] for p in ("p50", "p99", "mean", "min")}
    paired = [c - r for r, c in zip(raw, series["c"], strict=False)]
    floor = [a + d1 + d2 for a, d1, d2 in zip(series["a"], series["d1"], series["d2"], strict=False)]
    stats["floor"] = {
        "p50": S.percentile(floor, 50),
        "p99": S.percentile(floor, 99),
        "mean": sum(floor) / len(floor),
        "min": min(floor),
    }
    floor_paired = [c - f for f, c in zip(floor, series["c"], strict=False)]
    cpu_ms = {k: v * 1000 / n for k, v in cpu.items()}
    cpu_ms["c_window"], cpu_ms["c"] = cpu_ms["c"], app_cpu_loop * 1000 / n
    return {
        "turns": n,
        "failed_turns": failed,
        "litellm_import_s": round(litellm_import_s, 2),
        "ms": stats,
        "overhead_ms": overhead,
        "overhead_paired_ms": {"p50": S.percentile(paired, 50), "p99": S.percentile(paired, 99)},
        "overhead_over_floor_ms": {p: stats["c"][p] - stats["floor"][p] for p in ("p50", "p99", "mean")},
        "overhead_over_floor_paired_ms": {"p50": S.percentile(floor_paired, 50), "p99": S.percentile(floor_paired, 99)},
        "cpu_ms_per_turn": cpu_ms,
        "ws_ping_ms": {"p50": S.percentile(pings, 50), "p99": S.percentile(pings, 99)},
        "targets_ms": {"p50": TARGET_P50_MS, "p99": TARGET_P99_MS},
        "cpu_ratio_to_floor": cpu_ms["c"] / max(cpu_ms["a"] + cpu_ms["d1"] + cpu_ms["d2"], 1e-9),
        "cpu_ratio_to_aiohttp_floor": cpu_ms["c"] / max(cpu_ms["a"] + cpu_ms["e1"] + cpu_ms["e2"], 1e-9),
    }


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--max-seconds", type=float, default=240.0, help="stop measuring after this long")
    store = p.add_mutually_exclusive_group()
    store.add_argument("--postgres", action="store_true", help="store conversations in a throw-away PostgreSQL")
    store.add_argument("--incognito", action="store_true", help="store nothing (incognito turns)")
    p.add_argument("--profile", metavar="FILE", help="run the app under cProfile after the warm-up; stats to FILE")
    p.add_argument("--no-litellm", action="store_true", help="skip the raw litellm parts (b1, b2): the floor only")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    ms, oh = data["ms"], data["overhead_ms"]
    names = {
        "a": "a  raw fastmcp call_tool_mcp(echo), stdio",
        "b1": "b1 raw litellm stream, tool-call reply",
        "b2": "b2 raw litellm stream, text reply",
        "d1": "d1 raw httpx stream, tool-call reply",
        "d2": "d2 raw httpx stream, text reply",
        "e1": "e1 raw aiohttp stream, tool-call reply",
        "e2": "e2 raw aiohttp stream, text reply",
        "c": "c  websocket turn through the app",
        "raw": "a + b1 + b2, summed per iteration",
        "floor": "a + d1 + d2, summed per iteration",
    }
    print(f"Per-round overhead: {data['turns']} turns ({data['failed_turns']} failed), after warm-up\n")
    S.print_table(
        ["part", "p50 ms", "p99 ms", "mean ms", "min ms"],
        [
            [names[k], v["p50"], v["p99"], v["mean"], v["min"]]
            for k, v in ms.items()
            if not (args.no_litellm and k in ("b1", "b2", "raw"))
        ],
    )
    print()

    def verdict(value: float, target: float) -> str:
        return "ok" if value <= target else "MISSED"

    if not args.no_litellm:
        S.print_table(
            ["host overhead: c - (a + b1 + b2), against litellm", "ms"],
            [
                ["p50", oh["p50"]],
                ["p99", oh["p99"]],
                ["mean", oh["mean"]],
                ["paired p50 (per-turn differences)", data["overhead_paired_ms"]["p50"]],
                ["paired p99 (per-turn differences)", data["overhead_paired_ms"]["p99"]],
            ],
        )
    fl = data["overhead_over_floor_ms"]
    print()
    S.print_table(
        ["host overhead over the floor: c - (a + d1 + d2)", "ms", "target ms", ""],
        [
            ["p50", fl["p50"], TARGET_P50_MS, verdict(fl["p50"], TARGET_P50_MS)],
            ["p99", fl["p99"], TARGET_P99_MS, verdict(fl["p99"], TARGET_P99_MS)],
            ["paired p50 (per-turn differences)", data["overhead_over_floor_paired_ms"]["p50"], "", ""],
        ],
    )
    cpu = data["cpu_ms_per_turn"]
    floor_cpu = cpu["a"] + cpu["d1"] + cpu["d2"]
    ratio = cpu["c"] / floor_cpu if floor_cpu else float("nan")
    print(
        f"\nCPU per turn: app process {cpu['c']:.1f} ms over the whole loop ({cpu['c_window']:.1f} ms inside the turns' "
        f"own windows); the floor in this process (a {cpu['a']:.1f} + d1 {cpu['d1']:.1f} + "
        f"d2 {cpu['d2']:.1f}) {floor_cpu:.1f} ms -> {ratio:.2f}x the floor (target {TARGET_CPU_RATIO}x: "
        f"{verdict(ratio, TARGET_CPU_RATIO)})"
    )
    aio_floor = cpu["a"] + cpu["e1"] + cpu["e2"]
    print(
        f"the same floor with aiohttp for the model calls (the app's direct path sends with aiohttp): a + e1 "
        f"{cpu['e1']:.1f} + e2 {cpu['e2']:.1f} = {aio_floor:.1f} ms -> {cpu['c'] / aio_floor:.2f}x"
    )
    if not args.no_litellm:
        print(f"raw litellm in this process: b1 {cpu['b1']:.1f} + b2 {cpu['b2']:.1f} ms")
    print(
        f"websocket ping/pong with the app process: p50 {data['ws_ping_ms']['p50']:.2f} ms, "
        f"p99 {data['ws_ping_ms']['p99']:.2f} ms"
    )
    if args.profile:
        import pstats

        print(f"\nThe app's event-loop thread under cProfile ({args.profile}), by own time:")
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(30)
    S.report("overhead", data, args, started, load)


if __name__ == "__main__":
    main()
