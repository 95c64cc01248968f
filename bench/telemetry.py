"""What tracing and metrics cost: host CPU per stored tool turn with tracing on and off.

Two `switchboard serve` processes on the same site (the toolbox over stdio, the HTTP LLM double
in its own process answering with a tool call, then text): one with no `OTEL_*` variable (tracing
off; metrics are always on), one exporting every span over OTLP/HTTP to a local receiver that
accepts and drops them (the SDK's default batching). Their turns are interleaved one by one over
websockets so that load from other processes falls on both alike. CPU is each app process's own
CPU time (/proc) over its turns; the exporter's thread is part of it.

    uv run python bench/telemetry.py [--turns 300] [--json]
"""

from __future__ import annotations

import asyncio
import os
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
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drop)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def _measure(args: Any, off: S.App, on: S.App) -> dict[str, Any]:
    """Turns interleaved one by one; each app's CPU over the whole measured stretch (its span
    exporter's thread works between turns too), read once its last spans have left: the SDK
    sends every 5 s, so the warm-up's spans leave before the CPU is first read, and the last
    batch before it is read again."""
    return await S.interleaved_turns(
        {"off": off, "on": on},
        turns=args.turns,
        warmup=args.warmup,
        text=USER_TEXT,
        settle_s=6.0,
        before_measuring_s=6.0,
    )


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
            sites[name] = (
                folder,
                S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url),
            )
        traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}"}
        with S.app_process(*sites["off"]) as off, S.app_process(sites["on"][0], {**sites["on"][1], **traced}) as on:
            try:
                figures = asyncio.run(_measure(args, off, on))
            except Exception:
                for name in ("off", "on"):
                    print(f"--- {name} app output:\n" + (Path(tmp) / name / "app.out").read_text()[-3000:])
                raise
    sink.shutdown()
    extra = figures["on"]["cpu_ms_per_turn"] / figures["off"]["cpu_ms_per_turn"] - 1
    S.print_table(
        ["tracing", "app CPU ms/turn", "turn ms p50", "turn ms p99"],
        [[name, f["cpu_ms_per_turn"], f["turn_ms_p50"], f["turn_ms_p99"]] for name, f in figures.items()],
    )
    print(f"\ntracing on costs {extra * 100:+.1f}% app CPU per tool turn (target: at most +10%)")
    S.report(
        "telemetry", {"figures": figures, "tracing_extra_cpu": extra, "turns": args.turns}, args, started, load_before
    )


if __name__ == "__main__":
    main()
