"""The console of a real `switchboard serve` process: Ctrl-C stops it at once without a
traceback, a port in use is one line and exit status 1, and a server that exits at once is
named with its exit code and the end of its stderr."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

from tests.support.harness import toolbox_entry, write_config
from tests.support.serve import ServeConsole, serve_env

EXITS = {"command": "python", "args": ["-c", "import sys; print('cannot start: no licence', file=sys.stderr); sys.exit(3)"]}


def test_ctrl_c_stops_at_once_without_a_traceback(tmp_path):
    write_config(tmp_path / "defaults", servers={"toolbox": toolbox_entry(), "licensed": EXITS})
    console = ServeConsole(tmp_path)
    proc = console.proc
    try:
        console.until_settled()
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    seen = console.rest()
    failed = next(line for line in seen if line.startswith("server licensed FAILED: "))
    assert "exited with code 3; its stderr ends: cannot start: no licence" in failed and "licensed.stderr.log" in failed
    assert "Traceback" not in "\n".join(seen) and "KeyboardInterrupt" not in "\n".join(seen), seen
    assert seen[-1] == "Switchboard stopped." and proc.returncode == 130, (seen, proc.returncode)
    # It was 4-7.5 s on a quiet machine (37-42 s on a busy one), waiting for the model library's import
    # and the interpreter's teardown; now 0.8-1.6 s with 20 processes waiting for the 2 cores.
    assert took < 3.0, f"Ctrl-C took {took:.2f} s"


def test_a_port_in_use_is_one_line_and_exit_status_1(tmp_path):
    write_config(tmp_path / "defaults", servers={"toolbox": toolbox_entry()})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "switchboard", "serve", "--port", str(port)], env=serve_env(tmp_path),
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert done.stderr == (f"Switchboard cannot start: port {port} on 127.0.0.1 is in use (another Switchboard, or "
                           "another program, listens there); stop it, or serve on another port with --port or "
                           "SWITCHBOARD_PORT.\n")  # fmt: skip
