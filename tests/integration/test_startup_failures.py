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
    environ = {
        **os.environ,
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "switchboard", "serve", "--host", "127.0.0.1", "--port", str(free_port()), *args],
        env=environ,
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_unusable_data_dir_ends_the_process_with_one_clear_line(tmp_path, workers, request):
    (tmp_path / "not-a-folder").write_text("a file where the data dir should be")
    store = {"SWITCHBOARD_DATABASE_URL": request.getfixturevalue("postgres_url")} if workers == "2" else {}
    done = _serve(tmp_path, "--workers", workers, SWITCHBOARD_DATA_DIR=str(tmp_path / "not-a-folder" / "data"), **store)
    assert done.returncode != 0, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("Switchboard failed to start")]
    assert len(set(ours)) == 1, done.stderr  # each worker process says it once
    assert len(ours) <= int(workers) and "NotADirectoryError" in ours[0] and "not-a-folder" in ours[0]
    assert "Traceback" not in done.stderr, "the traceback goes to the log, not the console"
    records = [json.loads(line) for line in (tmp_path / "logs" / "app.jsonl").read_text().splitlines()]
    failed = [r for r in records if r.get("event") == "startup_failed"]
    assert failed and "NotADirectoryError" in failed[0]["error"] and "Traceback" in failed[0]["exc"]


@pytest.mark.parametrize("how", [("--workers", "2"), ("SWITCHBOARD_WORKERS", "3")])
def test_several_workers_on_sqlite_are_refused_with_one_line_naming_the_database_url(tmp_path, how):
    """Each worker would run its own in-process relay: an approval, a cancel or an attach that
    reaches another worker than the turn's would fail. Refused before anything starts."""
    args, env = (how, {}) if how[0].startswith("--") else ((), {how[0]: how[1]})
    done = _serve(tmp_path, *args, SWITCHBOARD_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path}/store.db", **env)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Switchboard cannot start"), done.stderr
    assert "SWITCHBOARD_DATABASE_URL" in lines[0] and "PostgreSQL" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "logs").exists() and not (tmp_path / "store.db").exists()  # nothing started
    unset = _serve(tmp_path, "--workers", "2")  # the default store (SQLite in the data dir) too
    assert unset.returncode == 1 and "SWITCHBOARD_DATABASE_URL" in unset.stderr and "Traceback" not in unset.stderr


def test_a_broken_setting_is_named_and_the_process_exits(tmp_path):
    done = _serve(
        tmp_path,
        SWITCHBOARD_PORT="eighty",
        SWITCHBOARD_PROXY_SECRET="hunter2-secret",
        SWITCHBOARD_RETENTION_DAYS="soon",
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "SWITCHBOARD_RETENTION_DAYS" in lines[0] and "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr


def test_proxy_mode_without_its_secret_is_a_failed_start_not_a_503_forever(tmp_path):
    done = _serve(tmp_path, SWITCHBOARD_AUTH_MODE="proxy")
    assert done.returncode == 1
    assert "SWITCHBOARD_PROXY_SECRET" in done.stderr
