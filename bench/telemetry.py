"""What tracing and metrics cost: host CPU per stored tool turn with tracing on and off.

Two `switchboard serve` processes on the same site (the toolbox over stdio, the HTTP LLM double
in its own process answering with a tool call, then text): one with no `OTEL_*` variable (tracing
off; metrics are always on), one exporting every span over OTLP/HTTP to a local receiver that
accepts and drops them (`OTEL_BSP_SCHEDULE_DELAY=500`). Their turns are interleaved one by one over
websockets so that load from other processes falls on both alike. CPU is each app process's own
CPU time (/proc) over its turns; the exporter's thread is part of it.

    uv run python bench/telemetry.py [--turns 300] [--json]
"""

from __future__ import annotations

import asyncio
import os
import secrets
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import _support as S

USER_TEXT = "Please echo hello with the toolbox."


def _sink() -> ThreadingHTTPServer:
    class Drop(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drop)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def _measure(args: Any, off: S.App, on: S.App) -> dict[str, Any]:
    import websockets

    cpu: dict[str, list[float]] = {"off": [], "on": []}
    wall: dict[str, list[float]] = {"off": [], "on": []}
    async with websockets.connect(off.ws_url) as ws_off, websockets.connect(on.ws_url) as ws_on:
        for ws in (ws_off, ws_on):
            await ws.recv()  # session
        apps = {"off": (off, ws_off), "on": (on, ws_on)}
        for n in range(args.warmup + args.turns):
            for name in ("off", "on") if n % 2 == 0 else ("on", "off"):
                app, ws = apps[name]
                before = S.proc_cpu_s(app.pid)
                seconds, events = await S.ws_turn(ws, USER_TEXT, conversation_id=secrets.token_hex(6))
                used = S.proc_cpu_s(app.pid) - before
                if not S.turn_ok(events):
                    raise RuntimeError(f"a turn failed ({name}): {events[-3:]}")
                if n >= args.warmup:
                    cpu[name].append(used * 1000)
                    wall[name].append(seconds * 1000)
    await asyncio.sleep(1.0)  # the last batch of spans leaves
    return {name: {"cpu_ms_per_turn_mean": sum(v) / len(v), "cpu_ms_p50": S.percentile(v, 50),
                   "turn_ms_p50": S.percentile(wall[name], 50)} for name, v in cpu.items()}  # fmt: skip


def main() -> None:
    p = S.parser(__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    args = p.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    sink = _sink()
    with tempfile.TemporaryDirectory(prefix="bench-telemetry-") as tmp, S.double_process() as double:
        sites = {}
        for name in ("off", "on"):
            folder = Path(tmp) / name
            sites[name] = (folder, S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url))
        traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}",
                  "OTEL_BSP_SCHEDULE_DELAY": "500"}  # fmt: skip
        with S.app_process(*sites["off"]) as off, S.app_process(sites["on"][0], {**sites["on"][1], **traced}) as on:
            try:
                figures = asyncio.run(_measure(args, off, on))
            except Exception:
                for name in ("off", "on"):
                    print(f"--- {name} app output:\n" + (Path(tmp) / name / "app.out").read_text()[-3000:])
                raise
    sink.shutdown()
    extra = figures["on"]["cpu_ms_per_turn_mean"] / figures["off"]["cpu_ms_per_turn_mean"] - 1
    S.print_table(["tracing", "app CPU ms/turn (mean)", "CPU ms p50", "turn ms p50"],
                  [[name, f["cpu_ms_per_turn_mean"], f["cpu_ms_p50"], f["turn_ms_p50"]] for name, f in figures.items()])
    print(f"\ntracing on costs {extra * 100:+.1f}% app CPU per tool turn (target: at most +10%)")
    S.report("telemetry", {"figures": figures, "tracing_extra_cpu": extra, "turns": args.turns}, args, started, load_before)


if __name__ == "__main__":
    main()
