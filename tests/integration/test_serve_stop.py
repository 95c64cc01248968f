"""The console of a real `switchboard serve` process: Ctrl-C stops it at once without a
traceback, an idle stop (bundled servers forked, as shipped) waits for nothing and a stop that
must wait says for what, a port in use is one line and exit status 1, and a server that exits
at once is named with its exit code and the end of its stderr."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

from websockets.sync.client import connect as ws_connect

from tests.support.harness import double_model, toolbox_entry, write_config
from tests.support.llm_double import TextReply
from tests.support.serve import ServeConsole, serve_env

BUNDLED = {
    "dataviz": {"command": "python", "args": ["main.py"], "cwd": "backend/mcp/dataviz"},
    "pdfbasic": {"command": "python", "args": ["main.py"], "cwd": "backend/mcp/pdfbasic"},
}
EXITS = {
    "command": "python",
    "args": ["-c", "import sys; print('cannot start: no licence', file=sys.stderr); sys.exit(3)"],
}


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


def _stop(console: ServeConsole, sig: signal.Signals) -> tuple[float, list[str]]:
    """Send `sig`; (seconds until the process ended, the console lines after the signal)."""
    before = len(console.seen)
    started = time.monotonic()
    console.proc.send_signal(sig)
    try:
        console.proc.wait(30)
    finally:
        if console.proc.poll() is None:
            console.proc.kill()
    took = time.monotonic() - started
    return took, console.rest()[before:]


def test_an_idle_stop_of_forked_bundled_servers_waits_for_nothing(tmp_path):
    # It took 5.2-7.7 s: the forked servers' parent never read the end of its control socket (the
    # event loop still held the descriptor) and was killed after 5 s. Now 0.6-0.9 s at a load of 9-11
    # on 2 cores; 3 s leaves room for a busier machine.
    write_config(tmp_path / "defaults", servers=BUNDLED)
    console = ServeConsole(tmp_path)
    settled = console.until_settled()
    assert settled[-1] == "servers: 2 of 2 ready", settled
    time.sleep(0.5)
    took, after = _stop(console, signal.SIGTERM)
    assert took < 3.0, f"an idle SIGTERM took {took:.2f} s; the console said {after}"
    assert "Traceback" not in "\n".join(after), after
    parent_log = tmp_path / "logs" / "servers" / "_bundled-parent.stderr.log"
    assert parent_log.exists(), "the bundled servers were forked"


def test_a_stop_that_must_wait_says_what_it_waits_for(tmp_path, llm):
    llm.reset()
    llm.chunk_delay_s = 1.0
    llm.enqueue(TextReply("one two three four five six seven eight", chunks=8))
    write_config(tmp_path / "defaults", servers=BUNDLED, models=[double_model(llm)], default_model="double")
    console = ServeConsole(tmp_path, env={"DOUBLE_KEY": "x", "SWITCHBOARD_SHUTDOWN_GRACE_S": "2"})
    console.until_settled()
    with ws_connect(f"ws://127.0.0.1:{console.port}/ws", open_timeout=30) as ws:
        ws.recv(timeout=30)
        ws.send(json.dumps({"type": "chat", "content": "count"}))
        while json.loads(ws.recv(timeout=60))["type"] != "token":
            pass
        took, after = _stop(console, signal.SIGINT)
    assert "stopping: waiting up to 2 s for 1 running answer to finish (SWITCHBOARD_SHUTDOWN_GRACE_S)" in after, after
    assert after[-1] == "Switchboard stopped." and console.proc.returncode == 130, after
    assert took < 15, f"the stop took {took:.2f} s"


def test_a_port_in_use_is_one_line_and_exit_status_1(tmp_path):
    write_config(tmp_path / "defaults", servers={"toolbox": toolbox_entry()})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "switchboard", "serve", "--port", str(port)],
            env=serve_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done
    assert done.stdout == ""
    assert done.stderr == (
        f"Switchboard cannot start: port {port} on 127.0.0.1 is in use (another Switchboard, or "
        "another program, listens there); stop it, or serve on another port with --port or "
        "SWITCHBOARD_PORT.\n"
    )
