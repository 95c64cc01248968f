"""Pending OAuth sign-ins: what N presses of Connect (`GET /api/servers/X/connect`, never
finished) cost the app: resident memory and open files before and after, and how many
pending sign-ins are kept.

The app runs as `switchboard serve` in its own process with one OAuth server (the test
suite's `signin.py --oauth`: discovery, dynamic registration, PKCE); the same user presses
Connect N times, one after another.

    uv run python bench/oauth_pending.py [--connects 1000] [--against ../other-checkout] [--json]

`--against DIR` runs another checkout's app code (its `backend/` on PYTHONPATH) with this
venv, for a before/after on the same machine and hour.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import _support as S

SIGNIN = S.PROJECT_ROOT / "tests" / "support" / "servers" / "signin.py"


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def settle(pid: int, timeout_s: float = 90.0) -> None:
    """Until the app's RSS stays within 1 MiB for 3 s."""
    deadline, last, steady = time.monotonic() + timeout_s, S.proc_kib(pid), 0
    while time.monotonic() < deadline and steady < 3:
        time.sleep(1)
        now = S.proc_kib(pid)
        steady = steady + 1 if abs(now - last) < 1024 else 0
        last = now


def pending_rows(folder: Path) -> int | None:
    try:
        with sqlite3.connect(folder / "data" / "switchboard.db") as db:
            return db.execute("SELECT count(*) FROM oauth_pending").fetchone()[0]
    except sqlite3.Error:
        return None  # an older checkout keeps them in memory


def main() -> None:
    parser = S.parser(__doc__ or "")
    parser.add_argument("--connects", type=int, default=1000)
    parser.add_argument("--against", type=Path, default=None)
    args = parser.parse_args()
    load_before, started = os.getloadavg(), time.monotonic()
    port = S.free_port()
    server = subprocess.Popen(
        [sys.executable, str(SIGNIN), "--oauth", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        S.wait_http(f"http://127.0.0.1:{port}/.well-known/oauth-authorization-server", proc=server)
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            env = S.write_site(
                folder, {"signin": {"url": f"http://127.0.0.1:{port}/mcp", "auth": {"type": "oauth"}}}, None
            )
            if args.against is not None:
                env["PYTHONPATH"] = str(args.against.resolve() / "backend")
            with S.app_process(folder, env) as app, httpx.Client(base_url=app.base, timeout=60) as client:
                for _ in range(5):  # warm-up: imports, the first registration
                    client.get("/api/servers/signin/connect")
                settle(app.pid)  # the app imports litellm in the background after start-up (~100 MiB)
                rss0, files0 = S.proc_kib(app.pid), open_files(app.pid)
                began = time.monotonic()
                for _ in range(args.connects):
                    answer = client.get("/api/servers/signin/connect")
                    assert answer.status_code == 302, answer.text
                took = time.monotonic() - began
                time.sleep(1)
                rss1, files1 = S.proc_kib(app.pid), open_files(app.pid)
                rows = pending_rows(folder)
    finally:
        S.stop(server)
    data = {
        "connects": args.connects,
        "rss_before_mib": round(rss0 / 1024, 1),
        "rss_after_mib": round(rss1 / 1024, 1),
        "open_files_before": files0,
        "open_files_after": files1,
        "pending_rows": rows,
        "ms_per_connect": round(took * 1000 / args.connects, 1),
        "code": str(args.against or "this checkout"),
    }
    S.print_table(
        ["connects", "RSS before MiB", "RSS after MiB", "open files before", "after", "pending rows", "ms/connect"],
        [[args.connects, data["rss_before_mib"], data["rss_after_mib"], files0, files1, rows, data["ms_per_connect"]]],
    )
    S.report("oauth_pending", data, args, started, list(load_before))


if __name__ == "__main__":
    main()
