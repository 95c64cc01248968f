"""What the benchmarks share: the app and the LLM double as subprocesses on
127.0.0.1, websocket turns, /proc memory readings, percentiles, and the
printed table (plus `--json`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = BENCH_DIR.parent
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))  # `tests.support...`
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support.harness import TOOLBOX, free_port, toolbox_entry, write_config

__all__ = [
    "PROJECT_ROOT",
    "TOOLBOX",
    "App",
    "app_process",
    "children",
    "double_process",
    "free_port",
    "machine",
    "parser",
    "percentile",
    "print_table",
    "proc_cpu_s",
    "proc_kib",
    "report",
    "toolbox_entry",
    "wait_http",
    "write_site",
    "ws_turn",
]

SYSTEM_PROMPT = "You are a test assistant."


# -- numbers ---------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a live process has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """Direct child processes of `pid` (e.g. the app's stdio MCP servers)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def proc_kib(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of a live process from /proc (VmRSS now, VmHWM peak), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def machine() -> dict[str, Any]:
    mem_kib = next(
        int(l.split()[1]) for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal:")
    )
    return {
        "cores": os.cpu_count(),
        "ram_gib": round(mem_kib / 1024 / 1024, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


# -- output ----------------------------------------------------------------------


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help="also print the figures as one JSON object")
    return p


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.rjust(w) if n and i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def report(name: str, data: dict[str, Any], args: argparse.Namespace, started: float, load_before: list[float]) -> None:
    info = machine()
    info["loadavg_before"] = load_before
    info["seconds"] = round(time.monotonic() - started, 1)
    data = {"benchmark": name, "machine": info, **data}
    print(
        f"\n{info['cores']} cores, {info['ram_gib']} GiB, Python {info['python']}; load average before "
        f"{load_before}, after {info['loadavg']}; ran {info['seconds']} s"
    )
    if args.json:
        print(json.dumps(data))


# -- site and processes -------------------------------------------------------------


def write_site(
    folder: Path, servers: dict[str, Any], double_url: str | None, *, extra_models: dict[str, str] | None = None
) -> dict[str, str]:
    """Config files for the app in `folder` (defaults + empty overrides); returns
    the environment that points a `switchboard serve` process at them. The
    default model `double` talks to `double_url`; `extra_models` maps more
    model names to other doubles' URLs."""
    urls = ({"double": double_url} if double_url else {}) | (extra_models or {})
    models = [
        {"name": name, "model": "openai/double", "api_base": url, "api_key_env": "DOUBLE_KEY"}
        for name, url in urls.items()
    ] or None
    write_config(
        folder / "defaults",
        servers=servers,
        models=models,
        default_model="double" if double_url else None,
        system_prompt=SYSTEM_PROMPT,
    )
    (folder / "overrides").mkdir(exist_ok=True)
    return {
        "SWITCHBOARD_DEFAULTS_DIR": str(folder / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(folder / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(folder / "data"),
        "SWITCHBOARD_LOG_DIR": str(folder / "logs"),
        "DOUBLE_KEY": "k",
        "SWITCHBOARD_MAX_SOCKETS_PER_USER": "100000",  # sessions as the one dev user (--one-user, memory.py)
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def wait_http(
    url: str,
    *,
    status: int = 200,
    timeout_s: float = 120.0,
    interval_s: float = 0.05,
    proc: subprocess.Popen[Any] | None = None,
) -> float:
    """Poll `url` until it answers `status`; returns the monotonic time it did."""
    import httpx

    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            try:
                if client.get(url).status_code == status:
                    return time.monotonic()
            except httpx.HTTPError:
                pass
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"the process serving {url} exited with {proc.returncode}")
            time.sleep(interval_s)
    raise TimeoutError(f"{url} did not answer {status} within {timeout_s} s")


@dataclass
class App:
    proc: subprocess.Popen[bytes]
    port: int
    folder: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"


@contextmanager
def app_process(
    folder: Path,
    env: dict[str, str],
    *,
    wait_ready: bool = True,
    timeout_s: float = 120.0,
    command: list[str] | None = None,
) -> Iterator[App]:
    """`switchboard serve` as a child process (the venv's Python, so the pid is
    the app's own and /proc figures are the app's alone)."""
    port = free_port()
    argv = (command or [sys.executable, "-m", "switchboard"]) + ["serve", "--host", "127.0.0.1", "--port", str(port)]
    log = (folder / "app.out").open("ab")
    proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, env={**_base_env(), **env}, stdout=log, stderr=subprocess.STDOUT)
    app = App(proc, port, folder)
    try:
        if wait_ready:
            wait_http(f"{app.base}/readyz", timeout_s=timeout_s, interval_s=0.1, proc=proc)
        yield app
    finally:
        stop(proc)
        log.close()


@dataclass
class Double:
    base_url: str
    pid: int


@contextmanager
def double_process(
    *,
    tool: str = "toolbox_echo",
    text_only: bool = False,
    chunk_delay_s: float = 0.0,
    response_delay_s: float = 0.0,
    max_seconds: float = 900.0,
    answer_tokens: int = 0,
) -> Iterator[Double]:
    """The routing LLM double (bench/_double.py) in its own process."""
    argv = [
        sys.executable,
        str(BENCH_DIR / "_double.py"),
        "--tool",
        tool,
        "--chunk-delay",
        str(chunk_delay_s),
        "--response-delay",
        str(response_delay_s),
        "--max-seconds",
        str(max_seconds),
    ] + (["--text-only"] if text_only else [])
    if answer_tokens:
        argv += ["--answer-tokens", str(answer_tokens)]
    proc = subprocess.Popen(argv, cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_base_env())
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else b""
        if not line:
            raise RuntimeError("the LLM double did not start")
        yield Double(json.loads(line)["base_url"], proc.pid)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        stop(proc)


def stop(proc: subprocess.Popen[Any], timeout_s: float = 15.0) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


# -- websocket turns -----------------------------------------------------------------


async def ws_turn(
    ws: Any, content: str, *, conversation_id: str | None = None, timeout_s: float = 60.0, **extra: Any
) -> tuple[float, list[dict[str, Any]]]:
    """Send one chat message (`extra`: more of its fields, e.g. incognito); read events up
    to `message_done` (or an error). Returns (seconds from send to message_done, events)."""
    message: dict[str, Any] = {"type": "chat", "content": content, **extra}
    if conversation_id:
        message["conversation_id"] = conversation_id
    started = time.perf_counter()
    await ws.send(json.dumps(message))
    events: list[dict[str, Any]] = []
    deadline = started + timeout_s
    while True:
        raw = await asyncio.wait_for(ws.recv(), max(0.001, deadline - time.perf_counter()))
        event = json.loads(raw)
        events.append(event)
        if event["type"] == "message_done" or (event["type"] == "error" and event.get("code") != "tool_error"):
            if event["type"] == "error":
                # a turn that fails still ends with message_done, unless refused before it started
                with_done = await _maybe_done(ws, events, deadline)
                return time.perf_counter() - started, with_done
            return time.perf_counter() - started, events


async def interleaved_turns(
    apps: dict[str, App], *, turns: int, warmup: int, text: str, settle_s: float = 0.5, before_measuring_s: float = 0.0
) -> dict[str, dict[str, float]]:
    """Stored tool turns sent to two apps in turn, each in a new conversation over the app's own
    websocket (which of them goes first alternates, so that load from other processes falls on
    both alike). Per app: its process's CPU (/proc, every thread) per measured turn, read
    `settle_s` after the last turn (what the turns leave to do: the log writer, background writes,
    exported spans), and its turns' p50 and p99 wall time. `before_measuring_s`: a pause after the
    warm-up turns, before the CPU is first read."""
    import websockets

    names = list(apps)
    wall: dict[str, list[float]] = {name: [] for name in names}
    async with contextlib.AsyncExitStack() as stack:
        sockets = {name: await stack.enter_async_context(websockets.connect(app.ws_url)) for name, app in apps.items()}
        for ws in sockets.values():
            await ws.recv()  # session
        cpu_before: dict[str, float] = {}
        for n in range(warmup + turns):
            if n == warmup:
                await asyncio.sleep(before_measuring_s)
                cpu_before = {name: proc_cpu_s(app.pid) for name, app in apps.items()}
            for name in names if n % 2 == 0 else names[::-1]:
                seconds, events = await ws_turn(sockets[name], text, conversation_id=secrets.token_hex(6))
                if not turn_ok(events):
                    raise RuntimeError(f"a turn failed ({name}): {events[-3:]}")
                if n >= warmup:
                    wall[name].append(seconds * 1000)
        await asyncio.sleep(settle_s)
        cpu = {name: (proc_cpu_s(app.pid) - cpu_before[name]) * 1000 / turns for name, app in apps.items()}
    return {
        name: {
            "cpu_ms_per_turn": cpu[name],
            "turn_ms_p50": percentile(wall[name], 50),
            "turn_ms_p99": percentile(wall[name], 99),
        }
        for name in names
    }


async def _maybe_done(ws: Any, events: list[dict[str, Any]], deadline: float) -> list[dict[str, Any]]:
    try:
        raw = await asyncio.wait_for(ws.recv(), min(1.0, max(0.001, deadline - time.perf_counter())))
    except TimeoutError:
        return events
    events.append(json.loads(raw))
    return events


def turn_ok(events: list[dict[str, Any]]) -> bool:
    """One tool call that succeeded, no error, and a normal end."""
    results = [e for e in events if e["type"] == "tool_result"]
    done = events[-1] if events else {}
    return (
        done.get("type") == "message_done"
        and done.get("finish_reason") == "stop"
        and len(results) == 1
        and bool(results[0].get("ok"))
        and not any(e["type"] == "error" for e in events)
    )
