"""A stopped `switchboard serve` (SIGTERM, a rolling restart) gives an open `/api/chat` stream
the shutdown grace, even while its turn waits for an approval that will not come; then it stops
the turn, the stream gets the turn's `error` (the server restarted) and `message_done`, ends
cleanly, and the process exits. (Before, the server waited for the stream, which waited for the
approval's own timeout of minutes; then the stream was cut at the grace without being told.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from tests.support.doors import read_sse
from tests.support.harness import free_port, toolbox_entry, wait_for_port, write_config

GRACE_S = 1.0


def test_a_stream_waiting_for_an_approval_ends_cleanly_after_the_shutdown_grace(tmp_path):
    write_config(
        tmp_path / "defaults", servers={"toolbox": toolbox_entry()}
    )  # the offline demo model calls what it is told
    env = {
        **os.environ,
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
        "SWITCHBOARD_SHUTDOWN_GRACE_S": str(GRACE_S),
    }
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "switchboard", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, "switchboard serve", timeout_s=90)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while httpx.get(f"{base}/readyz", timeout=30).status_code != 200:
            assert time.monotonic() < deadline, "the toolbox did not become ready"
            time.sleep(0.2)
        with httpx.stream(
            "POST", f"{base}/api/chat", json={"content": "toolbox_delete_everything {}"}, timeout=60
        ) as response:
            events = read_sse(response.iter_lines())
            before = [name for name, _ in _until(events, "approval_request")]
            stopped = time.monotonic()
            proc.terminate()
            after = [name for name, _ in events]  # ends when the server ends the stream; raises if it breaks it
            ended_after = time.monotonic() - stopped
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert before[-1] == "approval_request" and "error" in after and after[-1] == "message_done", after
    assert GRACE_S <= ended_after < GRACE_S + 5, ended_after  # the grace, then the stream's clean end
    assert proc.returncode in (0, -signal.SIGTERM)  # it stopped by itself (uvicorn raises the signal again at the end)


def _until(events, name):
    for event in events:
        yield event
        if event[0] == name:
            return
