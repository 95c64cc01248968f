"""What a turn costs through each door, against the websocket.

One app process (`switchboard serve`, a real socket), the routing LLM double
in its own process; every turn is the same work: the double asks for
toolbox_echo, the app runs it, the double answers with text.  Interleaved turn
by turn so load from other processes falls on every door alike:
  ws      a `chat` message on an open websocket, read to `message_done`
  sse     `POST /api/chat` (server-sent events, read to `message_done`), a kept-alive HTTP connection
  token   the same with `Authorization: Bearer sb_...` (a token checked per request)
  v1      `POST /v1/chat/completions` (not streamed; an incognito turn: nothing stored)
  ws_inc, sse_inc   the websocket and `/api/chat` with `incognito: true`, to compare with v1
Wall time from send to the end, and the app process's CPU per turn.

    uv run python bench/doors.py [--turns 200] [--json]
"""

from __future__ import annotations

import asyncio
import json
import secrets
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

USER_TEXT = "Please echo hello with the toolbox."
DOORS = ("ws", "sse", "token", "ws_inc", "sse_inc", "v1")


async def run(args: Any) -> dict[str, Any]:
    import httpx
    import websockets

    with tempfile.TemporaryDirectory(prefix="bench-doors-") as tmp, S.double_process() as double:
        folder = Path(tmp)
        env = S.write_site(folder, {"toolbox": S.toolbox_entry(approval="never")}, double.base_url)
        with S.app_process(folder, env) as app:
            async with (
                httpx.AsyncClient(base_url=app.base, timeout=60) as http,
                websockets.connect(app.ws_url, max_size=2**24) as ws,
            ):
                await ws.recv()  # the session event
                token = (await http.post("/api/tokens", json={"name": "bench"})).json()["token"]

                async def sse_turn(headers: dict[str, str], incognito: bool = False) -> tuple[float, bool]:
                    body = {"content": USER_TEXT, "conversation_id": secrets.token_hex(6), "incognito": incognito}
                    start, events = time.perf_counter(), []
                    async with http.stream("POST", "/api/chat", json=body, headers=headers) as response:
                        async for line in response.aiter_lines():
                            if line.startswith("data: "):
                                events.append(json.loads(line[6:]))
                                if events[-1]["type"] == "message_done":
                                    break
                    return time.perf_counter() - start, S.turn_ok(events)

                async def v1_turn() -> tuple[float, bool]:
                    start = time.perf_counter()
                    response = await http.post(
                        "/v1/chat/completions",
                        json={"model": "double", "messages": [{"role": "user", "content": USER_TEXT}]},
                    )
                    ok = response.status_code == 200 and response.json()["choices"][0]["finish_reason"] == "stop"
                    return time.perf_counter() - start, ok

                async def ws_turn(incognito: bool = False) -> tuple[float, bool]:
                    if not incognito:
                        seconds, events = await S.ws_turn(ws, USER_TEXT, conversation_id=secrets.token_hex(6))
                        return seconds, S.turn_ok(events)
                    start, events = time.perf_counter(), []
                    await ws.send(
                        json.dumps(
                            {
                                "type": "chat",
                                "content": USER_TEXT,
                                "incognito": True,
                                "conversation_id": secrets.token_hex(6),
                            }
                        )
                    )
                    while not events or events[-1]["type"] != "message_done":
                        events.append(json.loads(await asyncio.wait_for(ws.recv(), 60)))
                    return time.perf_counter() - start, S.turn_ok(events)

                turns = {
                    "ws": ws_turn,
                    "sse": lambda: sse_turn({}),
                    "token": lambda: sse_turn({"Authorization": f"Bearer {token}"}),
                    "v1": v1_turn,
                    "ws_inc": lambda: ws_turn(True),
                    "sse_inc": lambda: sse_turn({}, True),
                }
                for _ in range(args.warmup):
                    for door in DOORS:
                        await turns[door]()
                series: dict[str, list[float]] = {d: [] for d in DOORS}
                cpu = dict.fromkeys(DOORS, 0.0)
                failed = dict.fromkeys(DOORS, 0)
                deadline = time.monotonic() + args.max_seconds
                while len(series["v1"]) < args.turns and time.monotonic() < deadline:
                    for door in DOORS:
                        used = S.proc_cpu_s(app.pid)
                        seconds, ok = await turns[door]()
                        cpu[door] += S.proc_cpu_s(app.pid) - used
                        series[door].append(seconds * 1000)
                        failed[door] += not ok
    n = len(series["v1"])
    stats = {
        d: {"p50": S.percentile(v, 50), "p99": S.percentile(v, 99), "mean": sum(v) / len(v)} for d, v in series.items()
    }
    paired = {d: [x - w for x, w in zip(series[d], series["ws"])] for d in DOORS if d != "ws"}
    return {
        "turns": n,
        "failed": failed,
        "ms": stats,
        "vs_ws_paired_ms": {d: {"p50": S.percentile(v, 50), "p99": S.percentile(v, 99)} for d, v in paired.items()},
        "cpu_ms_per_turn": {d: v * 1000 / n for d, v in cpu.items()},
    }


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--max-seconds", type=float, default=240.0, help="stop measuring after this long")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in __import__("os").getloadavg()]
    data = asyncio.run(run(args))
    names = {
        "ws": "websocket",
        "sse": "POST /api/chat (SSE)",
        "token": "POST /api/chat with a token",
        "v1": "POST /v1/chat/completions",
        "ws_inc": "websocket, incognito",
        "sse_inc": "POST /api/chat, incognito",
    }
    print(f"A turn through each door: {data['turns']} turns each, after warm-up; failed {data['failed']}\n")
    rows = []
    for door in DOORS:
        ms, vs = data["ms"][door], data["vs_ws_paired_ms"].get(door)
        rows.append(
            [
                names[door],
                ms["p50"],
                ms["p99"],
                vs["p50"] if vs else "",
                vs["p99"] if vs else "",
                data["cpu_ms_per_turn"][door],
            ]
        )
    S.print_table(["door", "p50 ms", "p99 ms", "vs ws p50 ms", "vs ws p99 ms", "app CPU ms/turn"], rows)
    S.report("doors", data, args, started, load)


if __name__ == "__main__":
    main()
