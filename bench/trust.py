"""Tool trust: what pins cost, and the administrators' tools listing at 300 tools.

1. Pins, in process: the registry's rebuild of a 300-tool catalogue when every pin is worked out
   (RFC 8785 + sha256 per tool: a server's first listing, or a re-listing) and when the pins are
   cached (the same listing: every other rebuild), and the trust check of a tool call
   (`registry.authorize`: a dict look-up and the state, which the call already did before trust).
2. `GET /api/admin/tools` with 300 tools waiting for review (a `trust: review` stdio server from
   tests/support/servers/many_tools.py, every tool pending: its whole definition as the diff and
   scanned for hidden characters), through the real app (Starlette's TestClient, in process).

    uv run python bench/trust.py [--tools 300] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))

from switchboard.config.models import ServerConfig  # noqa: E402
from switchboard.identity.access import Access  # noqa: E402
from switchboard.identity.users import User  # noqa: E402
from switchboard.tools.registry import ToolRegistry  # noqa: E402
from switchboard.tools.trust_pin import pin_of, tool_definition  # noqa: E402
from tests.support.servers.many_tools import catalogue  # noqa: E402


async def _listed(count: int) -> list:
    return list(await catalogue(count).list_tools())


def pins(count: int) -> dict[str, float]:
    import asyncio

    tools = [t.to_mcp_tool() for t in asyncio.run(_listed(count))]
    config = ServerConfig(command="x")
    fresh_ms, cached_ms = [], []
    for _ in range(20):
        registry = ToolRegistry()
        started = time.perf_counter()
        registry.rebuild([("many", config, tools)])
        fresh_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        registry.rebuild([("many", config, tools)])
        cached_ms.append((time.perf_counter() - started) * 1000)
    definitions = [tool_definition(t, "") for t in tools]
    started = time.perf_counter()
    for _ in range(20):
        for definition in definitions:
            pin_of(definition)
    pin_us = (time.perf_counter() - started) / (20 * count) * 1e6
    access = Access(User("a@example.com", frozenset({"users"})))
    names = [t.qualified_name for t in registry.all()]
    rounds = 100_000
    started = time.perf_counter()
    for i in range(rounds):
        registry.authorize(names[i % len(names)], access)
    authorize_us = (time.perf_counter() - started) / rounds * 1e6
    return {
        "rebuild_all_pins_ms": statistics.median(fresh_ms),
        "pin_us_per_tool": pin_us,
        "rebuild_cached_pins_ms": statistics.median(cached_ms),
        "authorize_us_per_call": authorize_us,
    }


def listing(count: int) -> dict[str, float]:
    from tests.support.harness import make_settings, running_app, write_config

    server = {
        "command": sys.executable,
        "args": [str(PROJECT_ROOT / "tests" / "support" / "servers" / "many_tools.py"), "--count", str(count)],
        "trust": "review",
    }
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        write_config(tmp / "defaults", servers={"many": server}, groups={"root@example.com": ["users", "admin"]})
        settings = make_settings(tmp, auth_mode="proxy", proxy_secret="bench-secret")
        headers = {"x-user-email": "root@example.com", "x-proxy-secret": "bench-secret"}
        with running_app(settings) as (client, _services):
            first = client.get("/api/admin/tools", headers=headers).json()["tools"]
            assert len(first) == count, f"{len(first)} tools listed, {count} expected"
            times = []
            for _ in range(30):
                started = time.perf_counter()
                response = client.get("/api/admin/tools", headers=headers)
                times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
            times.sort()
            return {
                "listing_p50_ms": statistics.median(times),
                "listing_p95_ms": times[int(len(times) * 0.95) - 1],
                "listing_bytes": len(response.content),
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {"tools": args.tools, **pins(args.tools), **listing(args.tools)}
    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value:,.3f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    if args.json:
        print(json.dumps(results))


if __name__ == "__main__":
    main()
