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
    _say(console, "x", event="server_status", server="pdfbasic", status="ready", reason=None, ready_after_s=1.234, tools=3)
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
