"""What one streamed model call costs in CPU, by client: litellm (as the app
calls it), the OpenAI SDK alone, and plain httpx + json. Supporting figures
for overhead.py and concurrency.py, where litellm is most of the app's CPU.

Each client streams the same request (system + user message and the test
toolbox's tool definitions, as the app builds them) from the HTTP LLM double
(its own process, no delays), answered with a tool call. CPU is this
process's CPU time per call; the best of three batches is kept.

    uv run python bench/llm_cost.py [--calls 60] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import _support as S

MESSAGES = [{"role": "system", "content": S.SYSTEM_PROMPT}, {"role": "user", "content": "Please echo hello."}]


async def _toolbox_tools() -> list[dict[str, Any]]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(command=sys.executable, args=[str(S.TOOLBOX)], keep_alive=False, log_file=Path(os.devnull))
    async with Client(transport) as client:
        listed = await client.list_tools()
    return [{"type": "function", "function": {"name": f"toolbox_{t.name}", "description": (t.description or "")[:1024],
             "parameters": {"type": "object", "properties": {}, **(t.input_schema or {})}}} for t in listed]  # fmt: skip


async def _measure(call: Callable[[], Awaitable[None]], calls: int) -> tuple[float, float]:
    best = (float("inf"), float("inf"))
    for _ in range(3):
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await call()
        best = min(best, ((time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls))
    return best


async def run(args: Any) -> dict[str, Any]:
    import httpx
    import litellm
    import openai

    litellm.suppress_debug_info = True
    tools = await _toolbox_tools()
    with S.double_process() as double:
        sdk = openai.AsyncOpenAI(base_url=double.base_url, api_key="k", max_retries=0)
        http = httpx.AsyncClient()
        body = {"model": "double", "messages": MESSAGES, "tools": tools, "stream": True,
                "stream_options": {"include_usage": True}}  # fmt: skip

        def via_litellm(with_tools: bool = True) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                extra = {"tools": tools} if with_tools else {}
                response = await litellm.acompletion(model="openai/double", api_base=double.base_url, api_key="k",
                                                     stream=True, messages=MESSAGES, stream_options={"include_usage": True},
                                                     num_retries=0, max_retries=0, **extra)  # fmt: skip
                async for _chunk in response:
                    pass

            return call

        async def via_sdk() -> None:
            stream = await sdk.chat.completions.create(model="double", messages=MESSAGES, tools=tools, stream=True,  # type: ignore[arg-type]
                                                       stream_options={"include_usage": True})  # fmt: skip
            async for _chunk in stream:
                pass

        async def via_httpx() -> None:
            async with http.stream("POST", f"{double.base_url}/chat/completions", json=body,
                                   headers={"authorization": "Bearer k"}) as response:  # fmt: skip
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        json.loads(line[6:])

        clients = {
            "litellm.acompletion, stream (as the app calls it)": via_litellm(),
            "litellm.acompletion, stream, no tools": via_litellm(with_tools=False),
            "openai SDK chat.completions.create, stream": via_sdk,
            "httpx stream + json.loads per chunk": via_httpx,
        }
        for call in clients.values():  # warm up every client
            for _ in range(10):
                await call()
        results = {}
        for name, call in clients.items():
            cpu, wall = await _measure(call, args.calls)
            results[name] = {"cpu_ms": cpu, "wall_ms": wall}
        await http.aclose()
        await sdk.close()
    return {"tools": len(tools), "calls": args.calls, "clients": results}


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=60, help="calls per batch (three batches per client)")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    print(f"\nOne streamed call with {data['tools']} tool definitions, answered with a tool call (best of 3 x {args.calls})\n")
    S.print_table(["client", "CPU ms/call", "wall ms/call"],
                  [[name, r["cpu_ms"], r["wall_ms"]] for name, r in data["clients"].items()])  # fmt: skip
    S.report("llm_cost", data, args, started, load)


if __name__ == "__main__":
    main()
