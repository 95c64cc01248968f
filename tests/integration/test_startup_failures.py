"""`switchboard serve` that cannot start says why in one line and exits non-zero, so that a
supervisor (Docker's `restart: unless-stopped`, systemd) restarts it instead of a 503 forever."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.harness import free_port, write_config


def _serve(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    write_config(tmp_path / "defaults", servers={})
    environ = {**os.environ, "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
               "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"), "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
               "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"), **env}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "switchboard", "serve", "--host", "127.0.0.1", "--port", str(free_port()),
                           *args], env=environ, capture_output=True, text=True, timeout=90)  # fmt: skip


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_unusable_data_dir_ends_the_process_with_one_clear_line(tmp_path, workers):
    (tmp_path / "not-a-folder").write_text("a file where the data dir should be")
    done = _serve(tmp_path, "--workers", workers, SWITCHBOARD_DATA_DIR=str(tmp_path / "not-a-folder" / "data"))
    assert done.returncode != 0, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("Switchboard failed to start")]
    assert len(set(ours)) == 1, done.stderr  # each worker process says it once
    assert len(ours) <= int(workers) and "NotADirectoryError" in ours[0] and "not-a-folder" in ours[0]
    assert "Traceback" not in done.stderr, "the traceback goes to the log, not the console"
    records = [json.loads(line) for line in (tmp_path / "logs" / "app.jsonl").read_text().splitlines()]
    failed = [r for r in records if r.get("event") == "startup_failed"]
    assert failed and "NotADirectoryError" in failed[0]["error"] and "Traceback" in failed[0]["exc"]


def test_a_broken_setting_is_named_and_the_process_exits(tmp_path):
    done = _serve(tmp_path, SWITCHBOARD_PORT="eighty", SWITCHBOARD_PROXY_SECRET="hunter2-secret",
                  SWITCHBOARD_RETENTION_DAYS="soon")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "SWITCHBOARD_RETENTION_DAYS" in lines[0] and "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr


def test_proxy_mode_without_its_secret_is_a_failed_start_not_a_503_forever(tmp_path):
    done = _serve(tmp_path, SWITCHBOARD_AUTH_MODE="proxy")
    assert done.returncode == 1
    assert "SWITCHBOARD_PROXY_SECRET" in done.stderr
