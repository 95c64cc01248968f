"""The admin console's listing: `GET /api/admin/servers` with a 300-tool server (the generated
catalogue of bench/catalogue.py) and 20 servers added in the console, and `GET /api/admin/tools`
where the app serves it: latency (p50/p99) over `--requests` requests, one at a time.

    uv run python bench/console.py [--tools 300] [--requests 200] [--json]
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

import _support as S
from catalogue import server_source

ADDED = 20


def _timed(client: httpx.Client, url: str, n: int) -> list[float] | None:
    if client.get(url).status_code == 404:
        return None
    times = []
    for _ in range(n):
        started = time.perf_counter()
        answer = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, answer.text
    return times


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--tools", type=int, default=300)
    p.add_argument("--requests", type=int, default=200)
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="bench-console-") as tmp:
        folder = Path(tmp)
        script = folder / "catalogue_server.py"
        script.write_text(server_source(args.tools))
        env = S.write_site(folder, {"cat": {"command": "python", "args": [str(script)]}}, None)
        (folder / "overrides" / "groups.yml").write_text("users:\n  dev@localhost: [users, admin]\n")
        with S.app_process(folder, env) as app, httpx.Client(base_url=app.base, timeout=30) as client:
            for i in range(ADDED):
                body = {"name": f"added-{i}", "url": f"http://127.0.0.1:9/mcp/{i}", "enabled": False}
                assert client.post("/api/admin/servers", json=body).status_code == 201
            servers = client.get("/api/admin/servers").json()["servers"]
            counted = sum(sum(s["tools"].values()) for s in servers)
            results = {
                "servers": _timed(client, "/api/admin/servers", args.requests),
                "tools": _timed(client, "/api/admin/tools?state=pending", args.requests),
            }
    data: dict[str, object] = {"servers_listed": len(servers), "tools_counted": counted}
    rows = []
    for name, times in results.items():
        if times is None:
            rows.append([f"GET /api/admin/{name}", "not served", "", ""])
            continue
        p50, p99 = statistics.median(times), S.percentile(times, 99)
        data[name] = {"p50_ms": round(p50, 2), "p99_ms": round(p99, 2)}
        rows.append([f"GET /api/admin/{name}", len(times), round(p50, 2), round(p99, 2)])
    print(f"\nThe admin console's listing: {len(servers)} servers, {counted} tools counted by trust state\n")
    S.print_table(["request", "n", "p50 ms", "p99 ms"], rows)
    S.report("console", data, args, started, load)


if __name__ == "__main__":
    main()
