"""What the operator's hooks cost a tool call: `Hooks.run` at one point, in this process.

  none       no hook configured at the point (every point of every call pays this)
  no-op      one in-process hook that allows (the runner's own cost: the event, the span and
             metrics, the record); target: at most 0.2 ms
  cedar      one Cedar hook (config/examples/hooks/tools.cedar), in-process
  command    one command hook: config/examples/hooks/blocklist.py, a Python process per call
  http       one http hook: the example OPA-style service (config/examples/hooks/policy_server.py)
             in its own process on 127.0.0.1

Each case runs `--runs` times after a warm-up; wall time per run, p50 and p99 (and CPU of this
process per run for the in-process cases).

    uv run python bench/hooks.py [--runs 2000] [--process-runs 60] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S
from switchboard.policy import Decision, Facts, Hooks, load_hooks
from switchboard.policy.config import HookSet, HookSpec, LoadedHook

EXAMPLES = S.PROJECT_ROOT / "config" / "examples" / "hooks"


class _Allow:
    async def decide(self, event: dict[str, Any], point: str) -> Decision:
        return Decision("allow")


def _facts() -> Facts:
    return Facts(
        email="a@example.com",
        groups=("users",),
        conversation_id="c1",
        model="m",
        tool="toolbox_echo",
        server="toolbox",
        arguments={"text": "hello"},
        annotations={"readOnlyHint": True},
    )


def _one(handler: dict[str, Any], folder: Path) -> Hooks:
    (folder / "hooks.json").write_text(json.dumps({"hooks": [{"event": "pre_tool", "handler": handler}]}))
    loaded = load_hooks(folder / "none", folder)
    assert not loaded.broken, loaded.errors
    return Hooks(loaded)


async def _measure(hooks: Hooks, runs: int) -> dict[str, float]:
    for _ in range(min(runs // 10, 20) + 1):
        await hooks.run("pre_tool", _facts())
    times = []
    cpu = time.process_time()
    for _ in range(runs):
        started = time.perf_counter()
        verdict = await hooks.run("pre_tool", _facts())
        times.append((time.perf_counter() - started) * 1000)
        assert verdict.denied is None, verdict
    cpu_ms = (time.process_time() - cpu) * 1000 / runs
    return {"p50_ms": S.percentile(times, 50), "p99_ms": S.percentile(times, 99), "cpu_ms": cpu_ms, "runs": runs}


async def _main(runs: int, process_runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copytree(EXAMPLES, folder / "hooks")
        results["none"] = await _measure(Hooks(), runs)
        spec = HookSpec.model_validate({"event": "pre_tool", "handler": {"type": "http", "url": "http://x"}})
        results["no-op"] = await _measure(Hooks(HookSet([LoadedHook("noop", spec, _Allow())])), runs)
        results["cedar"] = await _measure(_one({"type": "cedar", "policies": "hooks/tools.cedar"}, folder), runs)
        command = {"type": "command", "command": ["python", "hooks/blocklist.py"], "timeout_s": 10}
        results["command"] = await _measure(_one(command, folder), process_runs)
        port = S.free_port()
        service = subprocess.Popen([sys.executable, str(EXAMPLES / "policy_server.py"), "--port", str(port)])
        try:
            S.wait_http(f"http://127.0.0.1:{port}/", status=501, proc=service)  # it answers POST only
            http = {"type": "http", "url": f"http://127.0.0.1:{port}/decide", "timeout_s": 5}
            results["http"] = await _measure(_one(http, folder), process_runs * 5)
        finally:
            S.stop(service)
    return results


def main() -> None:
    parser = S.parser(__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--process-runs", type=int, default=60)
    args = parser.parse_args()
    started, load_before = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    results = asyncio.run(_main(args.runs, args.process_runs))
    S.print_table(
        ["hook", "runs", "p50 ms", "p99 ms", "CPU ms/run (this process)"],
        [[name, r["runs"], r["p50_ms"], r["p99_ms"], r["cpu_ms"]] for name, r in results.items()],
    )
    S.report("hooks", {"results": results}, args, started, load_before)


if __name__ == "__main__":
    main()
