"""Real MCP servers over stdio, streamable HTTP and SSE, and servers that
fail to start, through the app's own pool."""

from __future__ import annotations

import os

import pytest

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.tools import ServerPool
from tests.support.harness import TOOLBOX, run_toolbox_server
from tests.support.sinks import Sink


@pytest.fixture
def remote_urls():
    with run_toolbox_server("http") as http_url, run_toolbox_server("sse") as sse_url:
        yield http_url, sse_url


async def test_stdio_http_and_sse_servers_work_beside_failing_ones(tmp_path, remote_urls, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_TEST_APP_SECRET", "must-not-leak")
    http_url, sse_url = remote_urls
    servers = {
        "local": ServerConfig(command="python", args=[str(TOOLBOX)], env={"GIVEN": "yes"}),
        "remote_http": ServerConfig(url=http_url),
        "remote_sse": ServerConfig(url=sse_url),
        "missing": ServerConfig(command="definitely-not-a-command-4711"),
        "crashing": ServerConfig(command="python", args=[str(TOOLBOX), "--crash-on-start"]),
        "off": ServerConfig(command="python", enabled=False),
    }
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30)
    pool.start()
    try:
        await pool.wait_settled(60)
        status = {s.name: s for s in pool.statuses()}
        assert status["remote_sse"].transport == "sse" and status["remote_http"].transport == "http"
        for name in ("local", "remote_http", "remote_sse"):
            assert status[name].status == "ready", status[name]
            assert status[name].tool_count > 5
        assert status["missing"].status == "failed" and "not found" in status["missing"].reason
        assert status["crashing"].status == "failed"
        assert "refusing to start" in (status["crashing"].stderr_tail or "")
        assert status["off"].status == "disabled"

        tools = {t.qualified_name: t for t in pool.registry.all()}
        for name in ("local_add", "remote_http_add", "remote_sse_add"):
            outcome = await pool.call(tools[name], {"a": 2, "b": 3}, Sink())
            assert outcome.ok and outcome.text == "5.0"

        # A stdio child gets a minimal environment plus its own env, never the app's secrets.
        probe = tools["local_env_probe"]
        assert (await pool.call(probe, {"name": "GIVEN"}, Sink())).text == "GIVEN=yes"
        assert (await pool.call(probe, {"name": "SWITCHBOARD_TEST_APP_SECRET"}, Sink())).text.endswith("<unset>")
        assert "PATH" in os.environ and not (await pool.call(probe, {"name": "PATH"}, Sink())).text.endswith("<unset>")

        sink = Sink()
        outcome = await pool.call(tools["remote_http_slow"], {"steps": 3, "delay_s": 0.05}, sink)
        assert outcome.ok and [p[0] for p in sink.progress_seen] == [1, 2, 3]
    finally:
        await pool.stop()


async def test_stderr_goes_to_the_log_dir_not_the_console(tmp_path, capfd):
    servers = {"crashing": ServerConfig(command="python", args=[str(TOOLBOX), "--crash-on-start"])}
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30)
    pool.start()
    try:
        await pool.wait_settled(30)
    finally:
        await pool.stop()
    assert "refusing to start" in (tmp_path / "logs" / "servers" / "crashing.stderr.log").read_text()
    assert "refusing to start" not in capfd.readouterr().err


async def test_a_server_that_dies_mid_call_fails_the_call_at_once_and_comes_back(tmp_path):
    servers = {"local": ServerConfig(command="python", args=[str(TOOLBOX)], timeout_s=30)}
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30)
    pool.start()
    try:
        await pool.wait_settled(30)
        tools = {t.qualified_name: t for t in pool.registry.all()}
        from switchboard.errors import ServerUnavailable

        with pytest.raises(ServerUnavailable, match="restarted"):
            await pool.call(tools["local_crash"], {}, Sink())
        await pool.connections["local"].ready_event.wait()
        tools = {t.qualified_name: t for t in pool.registry.all()}
        assert (await pool.call(tools["local_echo"], {"text": "back"}, Sink())).text == "back"
    finally:
        await pool.stop()


async def test_an_idle_call_times_out_with_how_long_it_ran(tmp_path):
    servers = {"local": ServerConfig(command="python", args=[str(TOOLBOX)], timeout_s=0.5)}
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30)
    pool.start()
    try:
        await pool.wait_settled(30)
        tools = {t.qualified_name: t for t in pool.registry.all()}
        from switchboard.errors import ToolTimeout

        with pytest.raises(ToolTimeout, match="sent nothing for 0.5 s"):
            await pool.call(tools["local_hang"], {}, Sink())
        # progress resets the idle limit: 4 steps of 0.3 s each run 1.2 s in all
        outcome = await pool.call(tools["local_slow"], {"steps": 4, "delay_s": 0.3}, Sink())
        assert outcome.ok
    finally:
        await pool.stop()


async def test_allow_and_deny_filters_hide_tools(tmp_path):
    servers = {
        "local": ServerConfig(
            command="python", args=[str(TOOLBOX)], tools={"deny": ["crash"], "allow": ["echo", "crash"]}
        )
    }
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30)
    pool.start()
    try:
        await pool.wait_settled(30)
        assert [t.qualified_name for t in pool.registry.all()] == ["local_echo"]
    finally:
        await pool.stop()


class AnsweringSink(Sink):
    async def elicit(self, message, schema):
        return ("accept", {"name": "Lin", "age": 7})

    async def sample(self, messages, system_prompt, max_tokens):
        return "sampled text"


async def test_elicitation_and_sampling_work_on_modern_and_legacy_connections(tmp_path, remote_urls):
    _, sse_url = remote_urls  # SSE servers speak the older (2025-11-25) protocol: server-initiated requests
    servers = {"modern": ServerConfig(command="python", args=[str(TOOLBOX)]), "legacy": ServerConfig(url=sse_url)}
    pool = ServerPool(McpConfig(servers=servers), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=30)
    pool.start()
    try:
        await pool.wait_settled(60)
        tools = {t.qualified_name: t for t in pool.registry.all()}
        for server in ("modern", "legacy"):
            asked = await pool.call(tools[f"{server}_ask_name"], {}, AnsweringSink())
            assert asked.text == "hello Lin, age 7", (server, asked.text)
            sampled = await pool.call(tools[f"{server}_summarize_with_llm"], {"text": "x"}, AnsweringSink())
            assert sampled.text == "summary: sampled text", (server, sampled.text)
    finally:
        await pool.stop()
