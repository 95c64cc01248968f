"""The console of `switchboard serve` says when each server is ready or failed, and when all have settled."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time

from tests.support.harness import free_port, toolbox_entry, write_config


def test_serve_prints_one_line_per_server_and_a_summary(tmp_path):
    write_config(tmp_path / "defaults", servers={
        "toolbox": toolbox_entry(),
        "broken": {"command": "python", "args": ["-c", "import sys; sys.exit('cannot start: no licence')"]},
    })  # fmt: skip
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "groups.yml").write_text("users: [\n")
    env = {**os.environ, "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
           "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"), "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
           "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs")}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "switchboard", "serve", "--port", str(free_port())],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in proc.stderr], daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 90
        while not any(line.startswith("servers:") for line in seen) and time.monotonic() < deadline:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                assert proc.poll() is None, seen
    finally:
        proc.terminate()
        proc.wait(30)
    assert any(line.startswith("CONFIG ERROR:") and "groups.yml" in line and "line 2" in line for line in seen), seen
    ready = [line for line in seen if line.startswith("server toolbox ready in ")]
    assert ready and ready[0].endswith(" tools)"), seen
    assert any(line.startswith("server broken FAILED: ") for line in seen), seen
    assert seen[-1] == "servers: 1 of 2 ready, 1 failed (broken)", seen
