"""Start-up: time from process start to `/healthz` 200 and to `/readyz` 200
(every server ready) with the bundled servers (`config/defaults/mcp.json`: pdfbasic,
dataviz) and with 1, 4 and 8 stdio servers (copies of the test toolbox under
different names).

  * bundled: the shipped defaults as they are, `python -m switchboard serve` with only
    CONFIG_DIR / DATA_DIR / LOG_DIR in temp folders; the timeline from process start to
    /healthz, the app built (its `startup` log line), each server ready, /readyz; and
    each bundled server's own `python main.py` import time. Each checkout's `backend/` is
    compiled to bytecode first, as the Docker image and `scripts/serve` have it (with
    PYTHONDONTWRITEBYTECODE set, as here, Python would otherwise compile the app's modules
    again at every start, ~0.13 s of CPU); `--source` removes that bytecode instead;

  * the app as a real subprocess, `uv run switchboard serve --port P`, and (to
    /healthz only) the venv's `switchboard` script directly (no `uv run`), with
    SWITCHBOARD_DEFAULTS_DIR / CONFIG_DIR / DATA_DIR / LOG_DIR in temp folders;
  * the servers connected by the app's own `ServerPool` in this process, all
    at once (`pool.start()`, the app's way) and one after another (each
    `ServerConnection` started only when the one before is ready);
  * where the time before /healthz goes: `python -X importtime` of the app's
    imports, summed by top-level package.

    uv run python bench/startup.py [--bundled-only] [--restart] [--source] [--against ../main] [--servers 0,1,4,8] [--repeat 1] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _support as S

TARGET_HEALTHZ_S = 1.0
TARGET_BUNDLED_READY_S = 2.0
BUNDLED = ("pdfbasic", "dataviz")


def _servers(n: int) -> dict[str, Any]:
    return {f"toolbox{i + 1}": S.toolbox_entry(approval="never") for i in range(n)}


def _app_start(n: int, command: list[str], *, ready: bool = True) -> dict[str, float | None]:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        folder = Path(tmp)
        env = S.write_site(folder, _servers(n), None)
        port = S.free_port()
        argv = command + ["serve", "--host", "127.0.0.1", "--port", str(port)]
        log = (folder / "app.out").open("wb")
        started = time.monotonic()
        proc = subprocess.Popen(
            argv, cwd=S.PROJECT_ROOT, env={**S._base_env(), **env}, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            healthz = S.wait_http(f"http://127.0.0.1:{port}/healthz", timeout_s=120, interval_s=0.01, proc=proc)
            readyz = (
                S.wait_http(f"http://127.0.0.1:{port}/readyz", timeout_s=120, interval_s=0.01, proc=proc)
                if ready
                else None
            )
        finally:
            S.stop(proc)
            log.close()
        return {"healthz_s": healthz - started, "readyz_s": readyz - started if readyz is not None else None}


async def _pool_start(n: int, sequential: bool) -> float:
    from switchboard.config import load_app_config
    from switchboard.tools import ServerPool

    with tempfile.TemporaryDirectory(prefix="bench-startup-pool-") as tmp:
        folder = Path(tmp)
        S.write_site(folder, _servers(n), None)
        config = load_app_config(folder / "defaults", folder / "overrides", {})
        pool = ServerPool(config.mcp, project_root=S.PROJECT_ROOT, log_dir=folder / "logs", init_timeout_s=60)
        started = time.monotonic()
        try:
            if sequential:
                for conn in pool.connections.values():
                    conn.start()
                    await asyncio.wait_for(conn.ready_event.wait(), 60)
            else:
                pool.start()
                await asyncio.wait_for(asyncio.gather(*(c.ready_event.wait() for c in pool.connections.values())), 60)
            return time.monotonic() - started
        finally:
            await pool.stop()


def _bundled_start(root: Path, restart: bool = False) -> dict[str, float]:
    """The shipped defaults (bundled servers) of the checkout at `root`, run by its own venv;
    the timeline in seconds from process start. `restart`: the app has run once on the same
    data folder before (its database exists and is migrated), as on every start but the first."""
    with tempfile.TemporaryDirectory(prefix="bench-startup-bundled-") as tmp:
        folder = Path(tmp)
        env = {
            "SWITCHBOARD_CONFIG_DIR": str(folder / "overrides"),
            "SWITCHBOARD_DATA_DIR": str(folder / "data"),
            "SWITCHBOARD_LOG_DIR": str(folder / "logs"),
        }
        (folder / "overrides").mkdir()
        if restart:
            with S.app_process(folder, env, command=[str(_python(root)), "-m", "switchboard"]):
                pass
            (folder / "logs" / "app.jsonl").unlink()
        port = S.free_port()
        argv = [str(_python(root)), "-m", "switchboard", "serve", "--host", "127.0.0.1", "--port", str(port)]
        log = (folder / "app.out").open("wb")
        wall, started = time.time(), time.monotonic()
        proc = subprocess.Popen(argv, cwd=root, env={**S._base_env(), **env}, stdout=log, stderr=subprocess.STDOUT)
        try:
            healthz = S.wait_http(f"http://127.0.0.1:{port}/healthz", timeout_s=120, interval_s=0.01, proc=proc)
            readyz = S.wait_http(f"http://127.0.0.1:{port}/readyz", timeout_s=120, interval_s=0.01, proc=proc)
            # the servers, and those forked by the bundled servers' parent (its children)
            servers = S.children(proc.pid)
            servers += [grandchild for child in servers for grandchild in S.children(child)]
            cpu = {"app_cpu_s": S.proc_cpu_s(proc.pid), "servers_cpu_s": sum(S.proc_cpu_s(c) for c in servers)}
        finally:
            S.stop(proc)
            log.close()
        out = {"healthz_s": healthz - started, "readyz_s": readyz - started, **cpu}
        for line in (folder / "logs" / "app.jsonl").read_text().splitlines():
            entry = json.loads(line)
            at = _log_time(entry["ts"]) - wall
            if entry.get("event") == "startup":
                out["app_built_s"] = at
            elif entry.get("event") == "server_status" and entry.get("status") == "ready":
                out[f"{entry['server']}_ready_s"] = at
                out[f"{entry['server']}_connect_s"] = entry["ready_after_s"]
        return out


def _python(root: Path) -> Path:
    return root / ".venv" / "bin" / "python" if root != S.PROJECT_ROOT else Path(sys.executable)


def _log_time(ts: str) -> float:
    import calendar

    whole, ms = ts.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + int(ms) / 1000


def _bytecode(root: Path, compiled: bool) -> None:
    """`root`'s app modules compiled to bytecode (as deployed), or their bytecode removed."""
    if compiled:
        subprocess.run([str(_python(root)), "-m", "compileall", "-q", "backend"], cwd=root, check=True, timeout=300)
        return
    for cache in (root / "backend").rglob("__pycache__"):
        shutil.rmtree(cache)


def _bundled(repeat: int, against: Path | None, restart: bool = False, compiled: bool = True) -> dict[str, Any]:
    """Each run: this checkout, then (with `against`) the other one, turn by turn."""
    roots = {"this": S.PROJECT_ROOT} | ({"against": against} if against else {})
    for root in roots.values():
        _bytecode(root, compiled)
    runs: dict[str, dict[str, list[float]]] = {label: {} for label in roots}
    for _ in range(repeat):
        for label, root in roots.items():
            for key, value in _bundled_start(root, restart).items():
                runs[label].setdefault(key, []).append(value)
            for name in BUNDLED:  # the child's own start: its imports, before it reads stdin
                cwd = root / "backend" / "mcp" / name
                runs[label].setdefault(f"{name}_import_s", []).append(
                    _timed([str(_python(root)), "-c", "import main"], cwd=cwd)
                )
    out: dict[str, Any] = {}
    for label, root in roots.items():
        median = {k: sorted(v)[len(v) // 2] for k, v in runs[label].items()}
        out[label] = {
            "root": str(root),
            "median": median,
            "best": {k: min(v) for k, v in runs[label].items()},
            "runs": runs[label],
        }
    print(
        f"\nBundled servers (shipped defaults){', a restart (the database exists)' if restart else ''}"
        f"{', backend/ compiled' if compiled else ', backend/ from source'}: "
        f"seconds from process start, median of {repeat} "
        f"(min-max){'; runs interleaved with ' + str(against) if against else ''}\n"
    )
    steps = [("/healthz", "healthz_s"), ("app built (lifespan starts)", "app_built_s")]
    steps += [(f"{name} ready", f"{name}_ready_s") for name in BUNDLED]
    steps += [(f"{name}: connect + handshake", f"{name}_connect_s") for name in BUNDLED]
    steps += [
        ("/readyz", "readyz_s"),
        ("CPU s used by then: the app", "app_cpu_s"),
        ("CPU s used by then: its servers", "servers_cpu_s"),
    ]
    steps += [(f"`python -c 'import main'` in backend/mcp/{n}", f"{n}_import_s") for n in BUNDLED]
    rows = [[step] + [_spread(runs[label].get(key, [])) for label in roots] for step, key in steps]
    S.print_table(["step"] + list(roots), rows)
    readyz = out["this"]["median"]["readyz_s"]
    print(
        f"\nbundled /readyz target < {TARGET_BUNDLED_READY_S} s: median {readyz:.2f} s "
        f"({'ok' if readyz < TARGET_BUNDLED_READY_S else 'MISSED'})"
    )
    return out


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[len(ordered) // 2]:.2f} ({ordered[0]:.2f}-{ordered[-1]:.2f})"


def _timed(argv: list[str], cwd: Path = S.PROJECT_ROOT) -> float:
    started = time.monotonic()
    subprocess.run(argv, cwd=cwd, env=S._base_env(), check=True, capture_output=True, timeout=120)
    return time.monotonic() - started


def _importtime(module: str) -> tuple[float, list[tuple[str, float]]]:
    """Cumulative import time of `module` and the top-level packages it pulls in."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        check=False,
        cwd=S.PROJECT_ROOT,
        env=S._base_env(),
        capture_output=True,
        text=True,
        timeout=120,
    ).stderr
    by_top: dict[str, float] = {}
    total = 0.0
    for line in out.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        self_us, cumulative_us, name = int(m[1]), int(m[2]), m[4]
        total = max(total, cumulative_us / 1e6)
        by_top[name.split(".")[0]] = by_top.get(name.split(".")[0], 0.0) + self_us / 1e6
    return total, sorted(by_top.items(), key=lambda kv: -kv[1])[:12]


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--servers", default="0,1,4,8")
    p.add_argument("--repeat", type=int, default=1, help="runs of each case; the best is reported")
    p.add_argument("--bundled-only", action="store_true", help="only the bundled servers' case")
    p.add_argument(
        "--against", type=Path, help="another checkout (with its own .venv) to run turn by turn with this one"
    )
    p.add_argument(
        "--restart", action="store_true", help="bundled: a start on a data folder used before (not the first)"
    )
    p.add_argument("--source", action="store_true", help="bundled: without the app's bytecode (removed from backend/)")
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    bundled = _bundled(max(args.repeat, 3), args.against, args.restart, compiled=not args.source)
    if args.bundled_only:
        S.report("startup", {"bundled": bundled}, args, started, load)
        return
    counts = [int(x) for x in args.servers.split(",")]
    uv = ["uv", "run", "--project", str(S.PROJECT_ROOT), "switchboard"]
    direct = [str(Path(sys.executable).with_name("switchboard"))]
    rows, data = [], {"bundled": bundled, "servers": {}}
    for n in counts:
        figures: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for name, cmd in (("uv", uv), ("direct", direct)):
                r = _app_start(n, cmd, ready=name == "uv")
                figures.setdefault(f"{name}_healthz_s", []).append(r["healthz_s"])
                if r["readyz_s"] is not None:
                    figures.setdefault(f"{name}_readyz_s", []).append(r["readyz_s"])
            for mode in ("concurrent", "sequential"):
                seconds = asyncio.run(_pool_start(n, sequential=mode == "sequential")) if n else 0.0
                figures.setdefault(f"pool_{mode}_s", []).append(seconds)
        best = {k: min(v) for k, v in figures.items()}
        data["servers"][n] = {"best": best, "runs": figures}
        rows.append(
            [
                n,
                best["uv_healthz_s"],
                best["uv_readyz_s"],
                best["direct_healthz_s"],
                best["pool_concurrent_s"],
                best["pool_sequential_s"],
            ]
        )
        print(f"  {n} server(s) done", flush=True)

    print(f"\nStart-up (seconds, best of {args.repeat}; from process start)\n")
    S.print_table(
        ["servers", "uv run: /healthz", "uv run: /readyz", "direct: /healthz", "pool, concurrent", "pool, one by one"],
        rows,
    )
    print(
        "direct: the venv's `switchboard` script without `uv run` (to /healthz only); pool: the app's ServerPool "
        "in this process,\nall servers at once (the app's way) or each started when the one before is ready"
    )
    worst = max(max(d["best"]["uv_healthz_s"], d["best"]["direct_healthz_s"]) for d in data["servers"].values())
    print(
        f"\n/healthz target < {TARGET_HEALTHZ_S} s: worst best-of-run {worst:.2f} s "
        f"({'ok' if worst < TARGET_HEALTHZ_S else 'MISSED'})"
    )

    parts = {
        "uv run python -c pass": _timed(["uv", "run", "--project", str(S.PROJECT_ROOT), "python", "-c", "pass"]),
        "python -c pass": _timed([sys.executable, "-c", "pass"]),
        "python -c 'import switchboard.web.boot' (what runs before /healthz)": _timed(
            [sys.executable, "-c", "import uvicorn, switchboard.settings, switchboard.web.boot"]
        ),
        "python -c 'import switchboard.web.app' (loaded in a thread after /healthz)": _timed(
            [sys.executable, "-c", "import switchboard.web.app"]
        ),
        "python -c 'import litellm' (loaded in a thread after the app)": _timed(
            [sys.executable, "-c", "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP']='True'; import litellm"]
        ),
    }
    data["parts_s"] = parts
    print("\nWhere start-up time goes (one run each, wall seconds):")
    S.print_table(["step", "s"], [[k, v] for k, v in parts.items()])
    total, top = _importtime("switchboard.web.app")
    data["importtime"] = {"total_s": total, "self_s_by_package": dict(top)}
    print(f"\npython -X importtime: switchboard.web.app takes {total:.2f} s in all; self time by top-level package:")
    S.print_table(["package", "s"], top)
    S.report("startup", data, args, started, load)


if __name__ == "__main__":
    main()
