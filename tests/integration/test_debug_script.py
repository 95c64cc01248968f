"""scripts/debug_mcp_servers.py as an operator runs it: a real subprocess
against a temp config folder and real stdio MCP servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from switchboard.settings import PROJECT_ROOT
from tests.support.harness import TOOLBOX, toolbox_entry, write_config

SCRIPT = PROJECT_ROOT / "scripts" / "debug_mcp_servers.py"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """Overrides with a good server, one that crashes at start, a missing command,
    a disabled one and an invalid entry; empty defaults, so the bundled servers
    are not started."""
    write_config(tmp_path / "defaults")
    write_config(
        tmp_path / "overrides",
        servers={
            "toolbox": toolbox_entry(),
            "crashy": toolbox_entry(args=[str(TOOLBOX), "--crash-on-start"]),
            "ghost": {"command": "no-such-command-for-switchboard-tests"},
            "resting": toolbox_entry(enabled=False),
            "broken": {"command": "python", "url": "http://127.0.0.1:9/mcp"},
        },
    )
    return tmp_path


def run_script(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    env |= {
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp / "overrides"),
        "SWITCHBOARD_LOG_DIR": str(tmp / "logs"),
        "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--timeout", "40", *args],
        check=False,
        cwd=tmp,  # no stray .env from the checkout
        env=env,
        capture_output=True,
        text=True,
        timeout=55,
    )


def servers_by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {server["name"]: server for server in report["servers"]}


def test_json_report_lists_ready_failed_and_disabled_servers(config: Path) -> None:
    proc = run_script(config, "--json")

    assert proc.returncode == 1, proc.stderr
    servers = servers_by_name(json.loads(proc.stdout))
    assert set(servers) == {"toolbox", "crashy", "ghost", "resting", "broken"}

    toolbox = servers["toolbox"]
    assert (toolbox["status"], toolbox["transport"]) == ("ready", "stdio")
    assert toolbox["ready_after_s"] > 0
    assert toolbox["protocol_version"] == "2026-07-28"  # FastMCP servers speak the newest revision
    assert {"toolbox_echo", "toolbox_add", "toolbox_boom"} <= {t["name"] for t in toolbox["tools"]}
    assert toolbox["tool_count"] == len(toolbox["tools"])

    crashy = servers["crashy"]
    assert crashy["status"] == "failed"
    assert crashy["reason"]
    assert "toolbox: refusing to start (asked to crash)" in crashy["stderr_tail"]

    ghost = servers["ghost"]
    assert ghost["status"] == "failed"
    assert "no-such-command-for-switchboard-tests" in ghost["reason"]
    assert servers["resting"]["status"] == "disabled"

    broken = servers["broken"]
    assert broken["status"] == "failed"
    assert "config error" in broken["reason"] and "'broken'" in broken["reason"]


def test_selected_good_server_passes_and_a_call_prints_its_result(config: Path) -> None:
    proc = run_script(config, "--server", "toolbox", "--call", "toolbox_echo", "--args", '{"text": "hi there"}')

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "toolbox  [stdio]  ready" in proc.stdout
    assert "crashy" not in proc.stdout
    assert "call toolbox_echo: ok" in proc.stdout
    assert "hi there" in proc.stdout.split("call toolbox_echo")[1]


def test_a_failing_call_exits_1_with_the_tool_message(config: Path) -> None:
    proc = run_script(
        config, "--server", "toolbox", "--json", "--call", "toolbox_boom", "--args", '{"message": "nope"}'
    )

    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert servers_by_name(report)["toolbox"]["status"] == "ready"
    assert report["call"]["ok"] is False
    assert "nope" in report["call"]["text"]


def test_human_report_shows_reason_and_stderr_of_failures(config: Path) -> None:
    proc = run_script(config, "--server", "crashy", "--server", "ghost", "--server", "resting")

    assert proc.returncode == 1
    assert "crashy  [stdio]  failed" in proc.stdout
    assert "      | toolbox: refusing to start (asked to crash)" in proc.stdout
    assert "not found on PATH" in proc.stdout
    assert "resting  [stdio]  disabled" in proc.stdout


def test_unknown_server_is_a_usage_error(config: Path) -> None:
    proc = run_script(config, "--server", "nobody")

    assert proc.returncode == 2
    assert "no server named nobody" in proc.stderr
