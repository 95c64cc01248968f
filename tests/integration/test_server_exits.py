"""A stdio server that exits at once says how: its exit code, the last lines of its stderr and
where the whole log is, on /readyz and /api/config for administrators (never for others), in
the status the console prints, and from `switchboard check-config --start`."""

from __future__ import annotations

import os
import subprocess
import sys

from switchboard.__main__ import main
from tests.support.harness import make_settings, running_app, toolbox_entry, write_config

SECRET = "exit-secret"
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
USER = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}
EXITS = {
    "command": "python",
    "args": [
        "-c",
        "import sys; print('loading licence', file=sys.stderr); "
        "print('cannot start: no licence', file=sys.stderr); sys.exit(3)",
    ],
}


def test_the_exit_code_and_the_end_of_stderr_reach_readyz_and_the_page_for_admins_only(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={"toolbox": toolbox_entry(), "licensed": EXITS},
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    with running_app(make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)) as (client, services):
        log = tmp_path / "logs" / "servers" / "licensed.stderr.log"
        reason = services.pool.connections["licensed"].status.reason
        assert reason.startswith("the server process exited with code 3;"), reason
        assert "loading licence | cannot start: no licence" in reason and str(log) in reason
        admin = client.get("/readyz", headers=ADMIN).json()["servers"]["licensed"]
        assert admin["reason"] == reason and admin["stderr_log"] == str(log)
        assert admin["stderr_tail"] == "loading licence\ncannot start: no licence"
        assert "licence" not in client.get("/readyz", headers=USER).text
        page = {s["name"]: s for s in client.get("/api/config", headers=ADMIN).json()["servers"]}["licensed"]
        assert (
            page["stderr_tail"].endswith("no licence") and page["stderr_log"] == str(log) and "code 3" in page["reason"]
        )
        user = {s["name"]: s for s in client.get("/api/config", headers=USER).json()["servers"]}["licensed"]
        assert "stderr_tail" not in user and "licence" not in str(user)


def test_a_server_killed_by_a_signal_says_which(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={
            "killed": {"command": "python", "args": ["-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]}
        },
    )
    with running_app(make_settings(tmp_path)) as (_, services):
        reason = services.pool.connections["killed"].status.reason
    assert reason.startswith("the server process was killed by signal 9; it wrote nothing to stderr"), reason


def test_check_config_start_says_why_a_server_exits(tmp_path, monkeypatch, capsys):
    write_config(tmp_path / "defaults", servers={"toolbox": toolbox_entry(), "licensed": EXITS})
    monkeypatch.setenv("SWITCHBOARD_DEFAULTS_DIR", str(tmp_path / "defaults"))
    monkeypatch.setenv("SWITCHBOARD_CONFIG_DIR", str(tmp_path / "overrides"))
    monkeypatch.setenv("SWITCHBOARD_LOG_DIR", str(tmp_path / "logs"))
    assert main(["check-config", "--start"]) == 1
    out = capsys.readouterr().out
    log = tmp_path / "logs" / "check-config" / "servers" / "licensed.stderr.log"
    assert "server 'toolbox' started (" in out, out
    line = next(line for line in out.splitlines() if "licensed" in line)
    assert line.startswith("error: server 'licensed' did not start here: the server process exited with code 3;"), line
    assert "cannot start: no licence" in line and str(log) in line
    assert "1 error(s)" in out and out.rstrip().endswith("1 server(s) did not start: licensed")


def test_check_config_start_fails_once_per_server_that_crashes_or_times_out(tmp_path):
    """As a user runs it: the exit code, and each failure said once on the terminal (the
    connection's own retries and log lines are not shown)."""
    hangs = {"command": "python", "args": ["-c", "import time; time.sleep(120)"]}
    write_config(tmp_path / "defaults", servers={"licensed": EXITS, "silent": hangs})
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")} | {
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
        "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
        "SWITCHBOARD_SERVER_START_TIMEOUT_S": "4",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    done = subprocess.run(
        [sys.executable, "-m", "switchboard", "check-config", "--start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    shown = done.stdout + done.stderr
    assert done.returncode == 1, shown
    assert shown.count("cannot start: no licence") == 1, shown
    assert shown.count("did not finish the MCP handshake within 4 s") == 1, shown
    assert done.stdout.rstrip().endswith("2 server(s) did not start: licensed, silent"), shown
