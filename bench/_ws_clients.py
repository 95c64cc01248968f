"""Benchmark websocket clients in their own process: `--sessions` connections to
the app (raw `websockets`, no page), each doing `--turns` chat turns with one
tool call.

Protocol with the parent (bench/concurrency.py): once every connection is open
(or failed) this prints one JSON line {"connected": n, "failed": m}; then it
waits for a line on stdin and starts every session's turns at once; at the end
it prints one JSON line with the latencies (ms) and the errors. Running as a
separate process keeps the clients' CPU out of the app's and the double's, and
lets /proc tell it apart.

Each session is its own user when `--proxy-secret` is given (X-User-Email
bench-N@example.com), as a team's sessions would be; otherwise every session
is the app's dev user. Like a browser, the clients send no pings of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import secrets
import sys
import time
from typing import Any

import _support as S


def _raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _stdin_line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    import websockets

    latencies: list[float] = []
    errors: list[str] = []
    opened: list[Any] = []
    failed = 0
    start = asyncio.Event()
    gate = asyncio.Semaphore(args.connect_concurrency)

    async def open_one(n: int) -> Any:
        headers = (
            {"X-User-Email": f"bench-{args.first + n}@example.com", "X-Proxy-Secret": args.proxy_secret}
            if args.proxy_secret
            else {}
        )
        async with gate:
            ws = await websockets.connect(
                args.url,
                max_size=2**24,
                open_timeout=args.turn_timeout,
                ping_interval=None,
                additional_headers=headers,
                compression=None if args.no_compression else "deflate",
            )
            await asyncio.wait_for(ws.recv(), args.turn_timeout)  # the session event
            return ws

    async def session(ws: Any) -> None:
        try:
            await start.wait()
            for n in range(args.turns):
                seconds, events = await S.ws_turn(
                    ws, f"turn {n}: echo hello", conversation_id=secrets.token_hex(6), timeout_s=args.turn_timeout
                )
                if S.turn_ok(events):
                    latencies.append(seconds * 1000)
                else:
                    errors.append(f"bad turn: {[e['type'] for e in events][-4:]} {events[-1]}")
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            await ws.close()

    results = await asyncio.gather(*(open_one(n) for n in range(args.sessions)), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            failed += 1
            errors.append(f"connect: {type(result).__name__}: {result}")
        else:
            opened.append(result)
    print(json.dumps({"connected": len(opened), "failed": failed}), flush=True)
    await _stdin_line()
    began = time.perf_counter()
    tasks = [asyncio.create_task(session(ws)) for ws in opened]
    start.set()
    _, pending = await asyncio.wait(tasks, timeout=args.max_seconds) if tasks else (set(), set())
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    # A session that fails counts one error; its turns not run show as "cut off" in the parent.
    return {
        "latencies_ms": latencies,
        "errors": len(errors),
        "error_samples": errors[:5],
        "connect_failed": failed,
        "seconds": time.perf_counter() - began,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--sessions", type=int, required=True)
    p.add_argument("--first", type=int, default=0, help="number of this process's first user")
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--proxy-secret", default="")
    p.add_argument("--turn-timeout", type=float, default=600.0)
    p.add_argument("--max-seconds", type=float, default=900.0)
    p.add_argument("--connect-concurrency", type=int, default=100)
    p.add_argument("--no-compression", action="store_true", help="no permessage-deflate (browsers do ask for it)")
    args = p.parse_args()
    _raise_fd_limit()
    print(json.dumps(asyncio.run(_run(args))), flush=True)


if __name__ == "__main__":
    main()
