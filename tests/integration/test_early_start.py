"""Stdio servers started before the app is built (tools/servers/launch.py): each connection adopts
its early process instead of spawning a second one; the process is the one the pool would
have started (minimal environment, stderr in the server's log); a changed entry or an
unadopted process is stopped."""

from __future__ import annotations

import os
import time
from pathlib import Path

from starlette.testclient import TestClient

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.tools import ServerPool
from switchboard.tools.servers.launch import INHERITED_ENV, EarlyStarts
from switchboard.web.boot import booting_app
from tests.support.harness import TOOLBOX, make_settings, toolbox_entry, write_config
from tests.support.sinks import Sink


def counted(pids: Path) -> dict[str, object]:
    """The toolbox, writing its pid to `pids` first: one line per process started."""
    code = (
        f"import os, pathlib, runpy, sys; pathlib.Path({str(pids)!r}).open('a').write(f'{{os.getpid()}}\\n'); "
        f"sys.argv = [{str(TOOLBOX)!r}]; runpy.run_path({str(TOOLBOX)!r}, run_name='__main__')"
    )
    return {"command": "python", "args": ["-c", code]}


def started(pids: Path) -> list[int]:
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(check, timeout_s: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(check())


def test_the_inherited_environment_is_the_sdks():
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    assert list(INHERITED_ENV) == list(DEFAULT_INHERITED_ENV_VARS)


async def test_a_connection_adopts_its_early_process_and_a_changed_entry_starts_afresh(tmp_path, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_TEST_APP_SECRET", "must-not-leak")
    same, changed = tmp_path / "same.pids", tmp_path / "changed.pids"
    early_config = McpConfig(
        servers={
            "same": ServerConfig(**counted(same), env={"GIVEN": "yes"}),
            "changed": ServerConfig(**counted(changed)),
        }
    )
    early = EarlyStarts()
    await early.start(early_config, project_root=tmp_path, log_dir=tmp_path / "logs", files_origin=None)
    assert wait_for(lambda: len(started(same)) == 1 and len(started(changed)) == 1)
    first_changed = started(changed)[0]

    # The pool's config: "changed" now has another variable, so its early process is not the right one.
    config = McpConfig(
        servers={"same": early_config.servers["same"], "changed": ServerConfig(**counted(changed), env={"NEW": "1"})}
    )
    pool = ServerPool(config, project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30, early=early)
    pool.start()
    try:
        await pool.wait_settled(60)
        assert {s.name: s.status for s in pool.statuses()} == {"same": "ready", "changed": "ready"}
        assert len(started(same)) == 1  # adopted: no second process
        assert len(started(changed)) == 2 and not alive(first_changed)
        probe = next(t for t in pool.registry.all() if t.qualified_name == "same_env_probe")
        assert (await pool.call(probe, {"name": "GIVEN"}, Sink())).text == "GIVEN=yes"
        assert (await pool.call(probe, {"name": "SWITCHBOARD_TEST_APP_SECRET"}, Sink())).text.endswith("<unset>")
        assert not (await pool.call(probe, {"name": "PATH"}, Sink())).text.endswith("<unset>")
    finally:
        await pool.stop()
    assert not alive(started(same)[0])


async def test_an_early_process_that_fails_leaves_its_stderr_for_the_status(tmp_path):
    config = McpConfig(servers={"crashing": ServerConfig(command="python", args=[str(TOOLBOX), "--crash-on-start"])})
    early = EarlyStarts()
    await early.start(config, project_root=tmp_path, log_dir=tmp_path / "logs", files_origin=None)
    pool = ServerPool(config, project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30, early=early)
    pool.start()
    try:
        await pool.wait_settled(60)
        status = pool.statuses()[0]
        assert status.status == "failed" and "refusing to start" in (status.stderr_tail or "")
    finally:
        await pool.stop()


async def test_processes_no_connection_adopted_are_stopped_with_the_pool(tmp_path):
    pids = tmp_path / "gone.pids"
    early = EarlyStarts()
    await early.start(
        McpConfig(servers={"gone": ServerConfig(**counted(pids))}),
        project_root=tmp_path,
        log_dir=tmp_path / "logs",
        files_origin=None,
    )
    assert wait_for(lambda: len(started(pids)) == 1)
    pool = ServerPool(McpConfig(servers={}), project_root=tmp_path, log_dir=tmp_path / "logs", early=early)
    pool.start()
    await pool.stop()
    assert wait_for(lambda: not alive(started(pids)[0]), 5)


def test_the_served_app_adopts_the_processes_started_while_it_loads(tmp_path):
    pids = tmp_path / "served.pids"
    write_config(tmp_path / "defaults", servers={"toolbox": counted(pids), "plain": toolbox_entry()})
    boot = booting_app(make_settings(tmp_path))
    with TestClient(boot) as client:
        assert wait_for(lambda: client.get("/readyz").status_code == 200, 60)
        assert len(started(pids)) == 1
        assert boot.app is not None
        services = boot.app.state.services  # type: ignore[attr-defined]
        assert {s.name: s.status for s in services.pool.statuses()} == {"toolbox": "ready", "plain": "ready"}
    assert not alive(started(pids)[0])
    assert os.environ.get("SWITCHBOARD_TEST_APP_SECRET") is None
