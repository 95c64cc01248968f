"""Bundled servers forked from one pre-imported parent (tools/servers/forked.py): each is the process
`python main.py` in its folder would be (own process group, its folder, exactly its minimal
environment plus its `env`, stderr in its log), is stopped and restarted like any stdio server,
and third-party servers keep their own launch."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from pathlib import Path

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.tools import ServerPool
from switchboard.tools.servers.launch import CA_ENV, EarlyStarts
from tests.support.harness import PROJECT_ROOT, TOOLBOX
from tests.support.sinks import Sink


def _stat(pid: int) -> dict[str, str]:
    return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line)


def _children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()]


def _server_pid(name: str) -> int:
    """The pid of this test's process running `name` (its child, or its zygote's child)."""
    mine = _children(os.getpid())
    for pid in mine + [grandchild for child in mine for grandchild in _children(child)]:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if _gone(pid):
            continue
        if (name == "toolbox" and str(TOOLBOX).encode() in cmdline) or cwd == str(
            PROJECT_ROOT / "backend" / "mcp" / name
        ):
            return pid
    raise AssertionError(f"no process runs {name}")


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode().split("\0") if "=" in item)


def _gone(pid: int) -> bool:
    try:
        return _stat(pid)["State"].startswith("Z")
    except FileNotFoundError:
        return True


SECRET = "server-secret-" + secrets.token_hex(8)


def _holds(pid: int, needle: bytes) -> bool:
    """Whether `needle` is anywhere in the process's readable memory."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except (OSError, OverflowError, ValueError):
                continue
    return False


def _config() -> McpConfig:
    dataviz = ServerConfig(
        command="python",
        args=["main.py"],
        cwd="backend/mcp/dataviz",
        env={"DATAVIZ_TEST_TOOLS": "1", "FASTMCP_LOG_LEVEL": "DEBUG", "DATAVIZ_TOKEN": SECRET},
    )
    toolbox = ServerConfig(command="python", args=[str(TOOLBOX)])
    return McpConfig(servers={"dataviz": dataviz, "toolbox": toolbox})


async def _ready(pool: ServerPool, name: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while pool.connections[name].status.status != "ready":
        assert time.monotonic() < deadline, pool.connections[name].status
        await asyncio.sleep(0.05)


async def test_a_bundled_server_is_forked_with_its_own_folder_environment_and_log(tmp_path, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_TEST_APP_SECRET", "must-not-leak")
    early = EarlyStarts()
    config = _config()
    await early.start(config, project_root=PROJECT_ROOT, log_dir=tmp_path / "logs", files_origin="http://127.0.0.1:9")
    pool = ServerPool(
        config,
        project_root=PROJECT_ROOT,
        log_dir=tmp_path / "logs",
        init_timeout_s=60,
        early=early,
        files_origin="http://127.0.0.1:9",
    )
    pool.start()
    try:
        await pool.wait_settled(90)
        assert {s.name: s.status for s in pool.statuses()} == {"dataviz": "ready", "toolbox": "ready"}
        dataviz, toolbox = _server_pid("dataviz"), _server_pid("toolbox")
        parent = int(_stat(dataviz)["PPid"])
        assert parent != os.getpid() and b"_zygote.py" in Path(f"/proc/{parent}/cmdline").read_bytes()
        assert int(_stat(toolbox)["PPid"]) == os.getpid()  # a third-party server: started by the app itself
        assert os.getpgid(dataviz) == dataviz and os.getsid(dataviz) == dataviz
        assert os.readlink(f"/proc/{dataviz}/cwd") == str(PROJECT_ROOT / "backend" / "mcp" / "dataviz")
        # The environment it started with is the parent's: the minimal one (and the CA variables), without the app's secrets
        # (its `env` is applied in the child: see the test tools and the DEBUG log below).
        for pid in (dataviz, parent):
            assert set(_environ(pid)) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", *CA_ENV}
        # A server's variables reach only that server: the parent, whose memory every later child
        # inherits, never holds them.
        assert _holds(dataviz, SECRET.encode()) and not _holds(parent, SECRET.encode())
        # Its `env` reached the server: the test tools are listed, and fastmcp logs at DEBUG to the server's log.
        tool = next(t for t in pool.registry.all() if t.qualified_name == "dataviz_slow_count")
        sink = Sink()
        outcome = await pool.call(tool, {"n": 2, "delay_s": 0}, sink)
        assert outcome.ok and outcome.text == "Counted to 2." and [p[0] for p in sink.progress_seen] == [1, 2]
        assert "DEBUG" in (tmp_path / "logs" / "servers" / "dataviz.stderr.log").read_text()

        # Restarted: a fresh child of the same parent; the old one is gone.
        await pool.restart("dataviz")
        await _ready(pool, "dataviz")
        fresh = _server_pid("dataviz")
        assert fresh != dataviz and _gone(dataviz) and int(_stat(fresh)["PPid"]) == parent

        # Killed from outside: the connection sees it end and starts another.
        os.killpg(fresh, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not _gone(fresh) or pool.connections["dataviz"].status.status == "ready":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await _ready(pool, "dataviz")
        again = _server_pid("dataviz")
        tool = next(t for t in pool.registry.all() if t.qualified_name == "dataviz_describe_csv")
        assert (await pool.call(tool, {"csv_text": "a\n1\n"}, Sink())).ok
    finally:
        await pool.stop()
    assert _gone(again) and _gone(toolbox) and _gone(parent)


async def test_without_fork_the_bundled_server_starts_on_its_own(tmp_path):
    early = EarlyStarts(fork=False)
    config = McpConfig(servers={"dataviz": _config().servers["dataviz"]})
    await early.start(config, project_root=PROJECT_ROOT, log_dir=tmp_path / "logs", files_origin=None)
    pool = ServerPool(config, project_root=PROJECT_ROOT, log_dir=tmp_path / "logs", init_timeout_s=60, early=early)
    pool.start()
    try:
        await pool.wait_settled(90)
        assert pool.statuses()[0].status == "ready"
        assert int(_stat(_server_pid("dataviz"))["PPid"]) == os.getpid()
    finally:
        await pool.stop()
