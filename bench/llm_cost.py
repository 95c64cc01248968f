"""What one streamed model call costs in CPU, by client: the app's own
LLMClient.stream on each of its two paths (direct over aiohttp, and through
litellm), raw litellm (as the app called it before the direct path, and bare),
the OpenAI SDK alone, and plain httpx + json and plain aiohttp + json. Supporting figures
for overhead.py and concurrency.py, where the model client is most of the
app's CPU.

Each client streams the same request (system + user message and the test
toolbox's tool definitions, as the app builds them) from the HTTP LLM double
(its own process, no delays), answered with a tool call. CPU is this
process's CPU time per call. The clients take turns batch by batch (so load
from other processes falls on all alike); the best of `--rounds` batches is
kept.

`--shape` adds raw litellm calls with each option of the app's litellm
request left out, to show what each one costs.

    uv run python bench/llm_cost.py [--calls 60] [--rounds 5] [--shape] [--json]
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

    transport = StdioTransport(
        command=sys.executable, args=[str(S.TOOLBOX)], keep_alive=False, log_file=Path(os.devnull)
    )
    async with Client(transport) as client:
        listed = await client.list_tools()
    return [
        {
            "type": "function",
            "function": {
                "name": f"toolbox_{t.name}",
                "description": (t.description or "")[:1024],
                "parameters": {"type": "object", "properties": {}, **(t.input_schema or {})},
            },
        }
        for t in listed
    ]


async def _batch(call: Callable[[], Awaitable[None]], calls: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        await call()
    return (time.process_time() - cpu) * 1000 / calls, (time.perf_counter() - wall) * 1000 / calls


async def run(args: Any) -> dict[str, Any]:
    import aiohttp
    import httpx
    import litellm
    import openai

    from switchboard.config.models import ModelConfig
    from switchboard.llm import LLMClient

    litellm.suppress_debug_info = True
    tools = await _toolbox_tools()
    with S.double_process() as double:
        app_clients = {
            path: LLMClient(environ={"BENCH_KEY": "k"}, direct=path == "direct") for path in ("direct", "litellm")
        }
        model = ModelConfig(name="double", model="openai/double", api_base=double.base_url, api_key_env="BENCH_KEY")
        history = MESSAGES[1:]  # the system prompt goes in as `system`, as the engine passes it

        def via_app(path: str) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                async for _event in app_clients[path].stream(model, history, tools, system=S.SYSTEM_PROMPT):
                    pass

            return call

        sdk = openai.AsyncOpenAI(base_url=double.base_url, api_key="k", max_retries=0)
        http = httpx.AsyncClient()
        body = {
            "model": "double",
            "messages": MESSAGES,
            "tools": tools,
            "stream": True,
            "stream_options": {"include_usage": True},
        }

        def via_litellm(
            with_tools: bool = True, usage: bool = True, retry_options: bool = True, redact: bool = True
        ) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                extra: dict[str, Any] = {"tools": tools} if with_tools else {}
                if usage:
                    extra["stream_options"] = {"include_usage": True}
                if retry_options:
                    extra.update(num_retries=0, max_retries=0)
                litellm.turn_off_message_logging = redact  # as the app sets it
                response = await litellm.acompletion(
                    model="openai/double",
                    api_base=double.base_url,
                    api_key="k",
                    stream=True,
                    messages=MESSAGES,
                    **extra,
                )
                async for _chunk in response:
                    pass

            return call

        async def via_sdk() -> None:
            stream = await sdk.chat.completions.create(
                model="double",
                messages=MESSAGES,
                tools=tools,
                stream=True,  # type: ignore[arg-type]
                stream_options={"include_usage": True},
            )
            async for _chunk in stream:
                pass

        async def via_httpx() -> None:
            async with http.stream(
                "POST", f"{double.base_url}/chat/completions", json=body, headers={"authorization": "Bearer k"}
            ) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        json.loads(line[6:])

        session = aiohttp.ClientSession()

        async def via_aiohttp() -> None:
            async with session.post(
                f"{double.base_url}/chat/completions", json=body, headers={"authorization": "Bearer k"}
            ) as response:
                async for line in response.content:
                    if line.startswith(b"data: {"):
                        json.loads(line[6:])

        clients = {
            "app LLMClient.stream, direct path (aiohttp)": via_app("direct"),
            "app LLMClient.stream, litellm path": via_app("litellm"),
            "litellm.acompletion, stream (the app's request before)": via_litellm(),
            "litellm.acompletion, stream, no tools": via_litellm(with_tools=False),
            **(
                {
                    "litellm request shape: without stream_options (no usage)": via_litellm(usage=False),
                    "litellm request shape: without num_retries=0, max_retries=0": via_litellm(retry_options=False),
                    "litellm request shape: without turn_off_message_logging": via_litellm(redact=False),
                }
                if args.shape
                else {}
            ),
            "openai SDK chat.completions.create, stream": via_sdk,
            "httpx stream + json.loads per chunk": via_httpx,
            "aiohttp stream + json.loads per chunk": via_aiohttp,
        }
        for call in clients.values():  # warm up every client
            for _ in range(10):
                await call()
        best = {name: (float("inf"), float("inf")) for name in clients}
        for _ in range(args.rounds):
            for name, call in clients.items():
                best[name] = min(best[name], await _batch(call, args.calls))
        results = {name: {"cpu_ms": cpu, "wall_ms": wall} for name, (cpu, wall) in best.items()}
        await http.aclose()
        await session.close()
        await sdk.close()
        for client in app_clients.values():
            await client.aclose()
    return {"tools": len(tools), "calls": args.calls, "rounds": args.rounds, "clients": results}


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=60, help="calls per batch")
    p.add_argument("--rounds", type=int, default=5, help="batches per client, interleaved; the best is kept")
    p.add_argument("--shape", action="store_true", help="also litellm with each option of the app's request left out")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    data = asyncio.run(run(args))
    print(
        f"\nOne streamed call with {data['tools']} tool definitions, answered with a tool call "
        f"(best of {args.rounds} interleaved batches of {args.calls})\n"
    )
    S.print_table(
        ["client", "CPU ms/call", "wall ms/call"],
        [[name, r["cpu_ms"], r["wall_ms"]] for name, r in data["clients"].items()],
    )
    S.report("llm_cost", data, args, started, load)


if __name__ == "__main__":
    main()
