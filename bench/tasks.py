"""Background tasks: what following many of them costs the host.

One process holds the app's real parts (services: store, server pool, the task poller), with
the task test server (tests/support/servers/tasker.py) in a subprocess over streamable HTTP
(its queue takes all the tasks at once). For each `pollIntervalMs` the server advertises:
  idle    the host's CPU over `--window` seconds with no task (the baseline)
  tasks   `--tasks` tasks started (each sleeps for ten minutes on the server) and adopted by
          the poller, which then polls every one with `tasks/get` (backoff up to the interval);
          after a warm-up the host's CPU (this process: the poller, the MCP client, the store)
          over `--window` seconds, with the polls sent in that time
Then every task is cancelled (`tasks/cancel`).

    uv run python bench/tasks.py [--tasks 200] [--poll-ms 1000,5000] [--window 10] [--json]
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S
from switchboard.services import build_services
from tests.support.harness import double_model, make_settings, wait_for_port, write_config
from tests.support.llm_double import LLMDouble

TASKER = S.PROJECT_ROOT / "tests" / "support" / "servers" / "tasker.py"
OWNER = "bench@example.com"


class _Sink:
    async def progress(self, *args: Any) -> None: ...

    async def log(self, *args: Any) -> None: ...

    async def elicit(self, *args: Any) -> tuple[str, None]:
        return ("cancel", None)

    async def sample(self, *args: Any) -> str:
        return ""


async def measure(window: float, poller: Any) -> tuple[float, int]:
    cpu, polls = time.process_time(), poller.polls
    await asyncio.sleep(window)
    return time.process_time() - cpu, poller.polls - polls


async def run_one(tmp: Path, url: str, tasks: int, window: float) -> dict[str, Any]:
    with LLMDouble() as llm:
        write_config(
            tmp / "defaults",
            servers={"tasker": {"url": url, "approval": "never"}},
            models=[double_model(llm)],
            default_model="double",
        )
        services = build_services(make_settings(tmp), environ={"DOUBLE_KEY": "k"})
        await services.life.start()
        try:
            await services.pool.wait_settled(60)
            if services.life._warm_up is not None:
                await services.life._warm_up  # the model library's import is not the baseline
            await asyncio.sleep(1)
            idle_cpu, _ = await measure(window, services.tasks)
            await services.store.create_conversation(
                id="bench-tasks-conv", owner=OWNER, title="bench", model=None, compliance_level=None, levels_used=[None]
            )
            conn = services.pool.connections["tasker"]
            started = time.monotonic()
            handles = await asyncio.gather(
                *(conn.call("crunch", {"steps": 1, "delay": 600}, _Sink()) for _ in range(tasks))
            )
            for i, handle in enumerate(handles):
                await services.tasks.adopt(
                    handle,
                    owner=OWNER,
                    conversation_id="bench-tasks-conv",
                    server="tasker",
                    tool="tasker_crunch",
                    call_id=f"call-{i}",
                )
            start_s = time.monotonic() - started
            await asyncio.sleep(max(3.0, window / 2))  # past the backoff ramp
            busy_cpu, polls = await measure(window, services.tasks)
            held = services.tasks.held()
            for record in await services.tasks.records.of_owner(OWNER, limit=tasks):
                await services.tasks.cancel(OWNER, record.id)
        finally:
            await services.life.close()
    return {
        "tasks": tasks,
        "held": held,
        "start_s": round(start_s, 2),
        "idle_cpu_per_s": round(idle_cpu / window, 4),
        "cpu_per_s": round(busy_cpu / window, 4),
        "polls_per_s": round(polls / window, 1),
        "cpu_ms_per_poll": round(1000 * (busy_cpu - idle_cpu) / polls, 3) if polls else None,
    }


def main() -> None:
    p = S.parser(__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--poll-ms", default="1000,5000")
    p.add_argument("--window", type=float, default=10.0)
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    rows = []
    for poll_ms in [int(v) for v in args.poll_ms.split(",")]:
        port = S.free_port()
        proc = subprocess.Popen(
            [
                sys.executable,
                str(TASKER),
                "--http",
                str(port),
                "--poll-ms",
                str(poll_ms),
                "--concurrency",
                str(args.tasks + 10),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port, proc, "tasker --http")
            with tempfile.TemporaryDirectory() as tmp:
                row = asyncio.run(run_one(Path(tmp), f"http://127.0.0.1:{port}/mcp", args.tasks, args.window))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        rows.append({"poll_ms": poll_ms, **row})
    S.print_table(
        ["pollIntervalMs", "tasks", "held", "start s", "idle CPU s/s", "CPU s/s", "polls/s", "CPU ms/poll"],
        [
            [
                r["poll_ms"],
                r["tasks"],
                r["held"],
                r["start_s"],
                r["idle_cpu_per_s"],
                r["cpu_per_s"],
                r["polls_per_s"],
                r["cpu_ms_per_poll"],
            ]
            for r in rows
        ],
    )
    S.report("tasks", {"runs": rows}, args, started, load)


if __name__ == "__main__":
    main()
