"""Memory: resident memory of the app per idle websocket session and per
active session (a session mid-turn).

The app runs as `switchboard serve` in its own process, so its RSS (VmRSS in
/proc/PID/status) is the app's alone. After warm-up, N sessions are opened
(idle: connected, session event received, nothing asked) and then, on those
same sessions, N turns are started against a second LLM double that streams
its answer very slowly: a turn counts as active once its model request is in
flight, checked by counting the app's established TCP connections to that
double (/proc/net/tcp). Figures are RSS deltas divided by N; each reading is
the median of three, a second apart.

    uv run python bench/memory.py [--sessions 50,100,200] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import _support as S


def _connections_to(port: int) -> int:
    """Established TCP connections on this machine whose remote port is `port`."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


async def _rss(pid: int) -> float:
    readings = []
    for _ in range(3):
        await asyncio.sleep(1.0)
        readings.append(S.proc_kib(pid))
    return statistics.median(readings) / 1024


async def run(args: Any) -> dict[str, Any]:
    import websockets

    levels = [int(x) for x in args.sessions.split(",")]
    with (
        S.double_process() as fast,
        S.double_process(text_only=True, chunk_delay_s=600) as slow,
        tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp,
    ):
        slow_port = urlsplit(slow.base_url).port
        assert slow_port is not None
        folder = Path(tmp)
        env = S.write_site(
            folder, {"toolbox": S.toolbox_entry(approval="never")}, fast.base_url, extra_models={"slow": slow.base_url}
        )
        with S.app_process(folder, env) as app:
            sockets: list[Any] = []
            try:
                # Warm up: fast turns, and one slow turn (cancelled) so the slow double's client exists.
                warm = await websockets.connect(app.ws_url)
                await warm.recv()
                for _ in range(3):
                    await S.ws_turn(warm, "warm up", conversation_id=secrets.token_hex(6))
                await warm.send(json.dumps({"type": "chat", "content": "warm up", "model": "slow"}))
                await _until(lambda: _connections_to(slow_port) >= 1, 30)
                await warm.send(json.dumps({"type": "cancel"}))
                await _drain_until_done(warm)
                await warm.close()
                base = await _rss(app.pid)
                result: dict[str, Any] = {"rss_base_mib": base, "idle": [], "active": []}

                for n in levels:  # open sessions up to n (cumulative)
                    while len(sockets) < n:
                        batch = [
                            websockets.connect(app.ws_url, open_timeout=60) for _ in range(min(50, n - len(sockets)))
                        ]
                        opened = await asyncio.gather(*batch)
                        await asyncio.gather(*(ws.recv() for ws in opened))
                        sockets += opened
                    rss = await _rss(app.pid)
                    result["idle"].append({"sessions": n, "rss_mib": rss, "kib_per_session": (rss - base) * 1024 / n})
                idle_top = result["idle"][-1]["rss_mib"]

                started = 0
                for n in levels:  # start turns in the first n sessions (cumulative)
                    for ws in sockets[started:n]:
                        await ws.send(
                            json.dumps(
                                {
                                    "type": "chat",
                                    "content": "write a long answer",
                                    "model": "slow",
                                    "conversation_id": secrets.token_hex(6),
                                }
                            )
                        )
                    started = n
                    in_flight = await _until(lambda n=n: _connections_to(slow_port) >= n, 60)
                    rss = await _rss(app.pid)
                    result["active"].append(
                        {
                            "sessions": n,
                            "in_flight": in_flight,
                            "rss_mib": rss,
                            "kib_per_session": (rss - idle_top) * 1024 / n,
                        }
                    )
                result["peak_rss_mib"] = S.proc_kib(app.pid, "VmHWM") / 1024
                return result
            finally:
                await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)


async def _until(check: Any, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            break
        await asyncio.sleep(0.1)
    return int(check())


async def _drain_until_done(ws: Any) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        event = json.loads(await asyncio.wait_for(ws.recv(), 30))
        if event["type"] == "message_done":
            return


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--sessions", default="50,100,200")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    print(f"\nMemory of the app process (RSS; base after warm-up {data['rss_base_mib']:.1f} MiB)\n")
    rows = [["idle", r["sessions"], r["rss_mib"], r["kib_per_session"], ""] for r in data["idle"]]
    rows += [
        [
            "active (model streaming)",
            r["sessions"],
            r["rss_mib"],
            r["kib_per_session"],
            "yes" if r["in_flight"] else "NO",
        ]
        for r in data["active"]
    ]
    S.print_table(["sessions", "N", "RSS MiB", "KiB per session", "all N turns in flight"], rows)
    print("\nidle: (RSS - base) / N; active: (RSS - RSS with all sessions idle) / N, i.e. on top of an idle session")
    print(f"peak RSS (VmHWM) {data['peak_rss_mib']:.1f} MiB")
    S.report("memory", data, args, started, load)


if __name__ == "__main__":
    main()
