"""Another user's turn while an artifact goes to the file store (S3: a moto server on 127.0.0.1).

One process, the real turn engine (`ChatEngine`, `CallRunner`, an in-memory MCP server with an
`echo` tool, a scripted model: a tool round, then the answer) and the real `ArtifactStore` on
`S3Files`. Each rep, alternated:
  alone    the turn by itself
  before   the turn while a 20 MiB artifact is stored the way a turn stored it before issue 33
           item 8: `ArtifactStore.put` called on the event loop (as `CallRunner.result_of` did)
  now      the same while the artifact is stored as a turn stores it now: `await aput(...)`
           (the same `put` in a worker thread)
For each: the turn's wall time (from the moment the artifact starts), the artifact's own time,
and the longest the event loop was held (a ticker that sleeps 1 ms and notes its longest gap).

    uv run python bench/file_store.py [--reps 5] [--mib 20] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import FastMCP

import _support as S  # noqa: F401  (puts the project root on sys.path)
from switchboard.chat import CallRunner, CallSettings, ChatEngine, Conversations, ConversationState, TurnState
from switchboard.chat.events import ChatMessage
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.files.artifacts import ArtifactStore
from switchboard.files.backends import S3Files
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import ToolCallRequest
from switchboard.tools import ServerPool
from tests.support.s3 import AWS_ENV, make_bucket, s3_server
from tests.support.scripted_llm import ScriptedLLM

box = FastMCP("box")
USER = User("bench@example.com", frozenset({"users"}))


@box.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    return text


class _Ticker:
    """The longest gap between 1 ms sleeps: how long the loop was held at most."""

    def __init__(self) -> None:
        self.longest_s, self._stop = 0.0, False

    async def run(self) -> None:
        last = time.perf_counter()
        while not self._stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.longest_s, last = max(self.longest_s, now - last), now

    def stop(self) -> None:
        self._stop = True


async def _engine(folder: Path, files: ArtifactStore) -> tuple[ServerPool, CallRunner, AppConfig]:
    config = AppConfig(
        mcp=McpConfig(servers={"box": ServerConfig(url="http://in-memory.invalid/mcp", approval="never")}),
        llm=LLMConfig(default_model="m", models=[ModelConfig(name="m", model="openai/m")]),
        groups=GroupsConfig(),
        compliance=ComplianceLevels(),
        system_prompt="",
    )
    pool = ServerPool(config.mcp, project_root=folder, log_dir=folder, in_memory={"box": box})
    pool.start()
    await pool.wait_settled(30)
    return pool, CallRunner(pool, files, config.compliance, CallSettings(approval_timeout_s=2)), config


async def _turn(pool: ServerPool, calls: CallRunner, config: AppConfig, files: ArtifactStore) -> float:
    llm = ScriptedLLM([ToolCallRequest(id="c1", name="box_echo", arguments='{"text": "hi"}')], ["It said ", "hi."])
    engine = ChatEngine(
        llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
    )
    turn = TurnState(user=USER, conversation=ConversationState(owner=USER.email, incognito=True))
    recorder = Conversations(None, files).recorder  # type: ignore[arg-type]  # incognito: nothing stored
    started = time.perf_counter()
    events = [e async for e in engine.run_turn(turn, ChatMessage(type="chat", content="echo hi"), recorder)]
    assert events[-1].type == "message_done", events[-1]
    return time.perf_counter() - started


async def _one(
    mode: str, parts: tuple[ServerPool, CallRunner, AppConfig], files: ArtifactStore, data: bytes
) -> dict[str, float]:
    ticker = _Ticker()
    ticking = asyncio.create_task(ticker.run())
    await asyncio.sleep(0.01)
    artifact_s = 0.0

    async def store() -> None:
        nonlocal artifact_s
        started = time.perf_counter()
        if mode == "before":
            files.put(owner=USER.email, name="big.bin", mime="application/octet-stream", data=data)
        else:
            await files.aput(owner=USER.email, name="big.bin", mime="application/octet-stream", data=data)
        artifact_s = time.perf_counter() - started

    if mode == "alone":
        turn_s = await _turn(*parts, files)
    else:
        turn_s, _ = await asyncio.gather(_turn(*parts, files), store())
    ticker.stop()
    await ticking
    return {"turn_ms": turn_s * 1000, "artifact_ms": artifact_s * 1000, "loop_held_ms": ticker.longest_s * 1000}


async def run(args: Any) -> dict[str, Any]:
    data = os.urandom(args.mib * 1024 * 1024)
    with s3_server() as endpoint, tempfile.TemporaryDirectory(prefix="bench-files-") as tmp:
        os.environ.update({**AWS_ENV, "AWS_ENDPOINT_URL": endpoint})
        make_bucket(endpoint, "bench-files")
        files = ArtifactStore(S3Files("bench-files", "site"))
        parts = await _engine(Path(tmp), files)
        try:
            for mode in ("alone", "before", "now"):  # warm-up: the first of each is not counted
                await _one(mode, parts, files, data)
            rows: dict[str, list[dict[str, float]]] = {"alone": [], "before": [], "now": []}
            for rep in range(args.reps):
                for mode in ("alone", "before", "now") if rep % 2 == 0 else ("now", "before", "alone"):
                    rows[mode].append(await _one(mode, parts, files, data))
                    print(f"  {mode:6} {rows[mode][-1]}", file=sys.stderr, flush=True)
        finally:
            await parts[0].stop()
    summary = {
        mode: {key: round(statistics.median(r[key] for r in runs), 1) for key in runs[0]} for mode, runs in rows.items()
    }
    return {"mib": args.mib, "reps": args.reps, "load": [round(x, 2) for x in os.getloadavg()], "p50": summary}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--mib", type=int, default=20, help="the artifact's size in MiB")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"p50 over {args.reps} reps, a {args.mib} MiB artifact to S3 (moto), load {result['load']}")
    print("| case | the other turn, ms | the artifact, ms | loop held at most, ms |")
    print("|---|---|---|---|")
    for mode, row in result["p50"].items():
        print(f"| {mode} | {row['turn_ms']} | {row['artifact_ms'] or '-'} | {row['loop_held_ms']} |")


if __name__ == "__main__":
    main()
