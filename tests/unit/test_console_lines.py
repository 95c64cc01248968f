"""What `switchboard serve` prints while it runs: one line per server status change."""

from __future__ import annotations

import io
import logging

from switchboard.logs import ConsoleLines


def _say(handler: ConsoleLines, msg: str, **extra: object) -> None:
    handler.handle(logging.makeLogRecord({"name": "switchboard", "levelno": logging.INFO, "msg": msg, **extra}))


def test_status_changes_make_one_human_line_each_and_repeats_are_quiet():
    out = io.StringIO()
    console = ConsoleLines(out)
    _say(
        console,
        "x",
        event="server_status",
        server="pdfbasic",
        status="ready",
        reason=None,
        ready_after_s=1.234,
        tools=3,
    )
    _say(console, "x", event="server_status", server="git", status="failed", reason="could not start: no git", tools=0)
    _say(console, "x", event="server_status", server="git", status="failed", reason="could not start: no git", tools=0)
    _say(console, "x", event="servers_settled", total=2, ready=1, failed=["git"], required_not_ready=[])
    _say(console, "x", event="llm_call", model="demo")
    _say(console, "x", event="server_restart", server="git")
    _say(console, "x", event="server_status", server="git", status="failed", reason="could not start: no git", tools=0)
    _say(console, "config error: groups.yml: not valid YAML", event="config_error")
    assert out.getvalue().splitlines() == [
        "server pdfbasic ready in 1.2 s (3 tools)",
        "server git FAILED: could not start: no git",
        "servers: 1 of 2 ready, 1 failed (git)",
        "server git restarting",
        "server git FAILED: could not start: no git",
        "CONFIG ERROR: groups.yml: not valid YAML",
    ]


def test_the_summary_says_which_servers_wait_for_users_to_sign_in():
    out = io.StringIO()
    _say(
        ConsoleLines(out),
        "x",
        event="servers_settled",
        total=5,
        ready=3,
        failed=[],
        needs_auth=["github", "drive"],
        required_not_ready=[],
    )
    assert out.getvalue().splitlines() == ["servers: 3 of 5 ready, 2 waiting for users to sign in (github, drive)"]


async def test_the_pool_reports_servers_waiting_for_sign_in_when_it_settles(tmp_path, caplog):
    from fastmcp import FastMCP

    from switchboard.config.loader import McpConfig
    from switchboard.config.models import ServerConfig
    from switchboard.tools import ServerPool

    mcp = McpConfig(
        servers={
            "github": ServerConfig(
                url="https://mcp.example.com/mcp", auth={"type": "user_token", "header": "Authorization"}
            ),
            "local": ServerConfig(command="python"),
        }
    )
    pool = ServerPool(mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"local": FastMCP("local")})
    with caplog.at_level(logging.INFO, logger="switchboard.tools"):
        pool.start()
        await pool.wait_settled(5)
    await pool.stop()
    [settled] = [r for r in caplog.records if getattr(r, "event", None) == "servers_settled"]
    assert settled.needs_auth == ["github"] and settled.ready == 1 and settled.failed == []
