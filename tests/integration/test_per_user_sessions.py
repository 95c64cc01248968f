"""Per-user sessions on a real token-protected HTTP MCP server: each user's own token,
their own MCP session, closed when idle or to make room; never another user's."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.errors import NeedsAuth
from switchboard.tools import ServerPool, ToolInfo
from tests.support.harness import free_port, wait_for_port
from tests.support.sinks import Sink

SIGNIN = Path(__file__).parents[1] / "support" / "servers" / "signin.py"


def run_signin(*args: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SIGNIN), *args, str(port)] if len(args) == 1 else
                            [sys.executable, str(SIGNIN), args[0], str(port), *args[1:]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_for_port(port, proc, "the sign-in server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def token_server() -> Iterator[str]:
    yield from run_signin("--token")


WHOAMI = ToolInfo(qualified_name="signin_whoami", server="signin", name="whoami", description="",
                  input_schema={}, annotations={})  # fmt: skip


async def whoami(pool: ServerPool, user: str) -> dict[str, str]:
    outcome = await pool.call(WHOAMI, {}, Sink(), user=user)
    assert outcome.ok, outcome.text
    return outcome.results if isinstance(outcome.results, dict) else json.loads(outcome.text)


def make_pool(tmp_path, url: str, **extra) -> ServerPool:
    config = ServerConfig(url=url, auth={"type": "user_token"}, **extra)
    return ServerPool(McpConfig(servers={"signin": config}), project_root=tmp_path, log_dir=tmp_path / "logs",
                      init_timeout_s=20)  # fmt: skip


async def test_each_user_gets_their_own_session_with_their_own_token(tmp_path, token_server):
    pool = make_pool(tmp_path, token_server)
    pool.start()
    try:
        assert pool.statuses()[0].status == "needs_auth"
        assert pool.readiness().ready  # waiting for users is not a failure
        assert (await pool.user_status("signin", "alice@x")).status == "needs_auth"
        with pytest.raises(NeedsAuth, match="press Connect"):
            await pool.call(WHOAMI, {}, Sink(), user="alice@x")

        await pool.set_user_token("signin", "alice@x", "tok-alice")
        await pool.set_user_token("signin", "bob@x", "tok-bob")
        alice, bob = await whoami(pool, "alice@x"), await whoami(pool, "bob@x")
        assert alice["token"] == "tok-alice" and bob["token"] == "tok-bob"
        group = pool.connections["signin"]
        alice_session = group.session_of("alice@x")
        assert alice_session is not None and alice_session is not group.session_of("bob@x")
        await whoami(pool, "alice@x")
        assert group.session_of("alice@x") is alice_session  # kept, not reopened

        # once a session has listed them, the registry offers the server's tools
        assert pool.statuses()[0].status == "ready"
        assert {t.name for t in pool.registry.all()} >= {"whoami", "echo"}
        assert (await pool.user_status("signin", "carol@x")).status == "needs_auth"

        await pool.disconnect("signin", "bob@x")
        with pytest.raises(NeedsAuth):
            await pool.call(WHOAMI, {}, Sink(), user="bob@x")
        assert (await whoami(pool, "alice@x"))["token"] == "tok-alice"
    finally:
        await pool.stop()


async def test_a_refused_token_says_so_and_is_not_retried(tmp_path, token_server):
    pool = make_pool(tmp_path, token_server)
    pool.start()
    try:
        refused = await pool.set_user_token("signin", "alice@x", "wrong")
        assert refused is not None and "HTTP 401" in refused  # tried at once, and not kept
        assert not await pool.connected("signin", "alice@x")
        with pytest.raises(NeedsAuth, match="press Connect"):
            await pool.call(WHOAMI, {}, Sink(), user="alice@x")
        assert (await pool.user_status("signin", "alice@x")).status == "needs_auth"
        await pool.set_user_token("signin", "alice@x", "tok-fixed")
        assert (await whoami(pool, "alice@x"))["token"] == "tok-fixed"
    finally:
        await pool.stop()


async def test_idle_sessions_close_and_the_least_recently_used_makes_room(tmp_path, token_server):
    pool = make_pool(tmp_path, token_server, idle_close_s=1.2, max_user_sessions=2)
    pool.start()
    group = pool.connections["signin"]
    try:
        for user in ("a@x", "b@x", "c@x"):
            await pool.set_user_token("signin", user, f"tok-{user}")
        await whoami(pool, "a@x")
        first_a = group.session_of("a@x")
        await whoami(pool, "b@x")
        await whoami(pool, "a@x")  # b is now the least recently used
        await whoami(pool, "c@x")
        assert group.session_of("b@x") is None and group.open_sessions == 2
        await whoami(pool, "a@x")
        assert group.session_of("a@x") is first_a

        await asyncio.sleep(2.0)
        assert group.open_sessions == 0  # closed after idle_close_s
        assert (await whoami(pool, "a@x"))["token"] == "tok-a@x"
        assert group.session_of("a@x") is not first_a  # reopened on use
    finally:
        await pool.stop()


async def test_a_required_server_waiting_for_users_to_connect_does_not_hold_up_readiness(tmp_path, token_server):
    pool = make_pool(tmp_path, token_server, required=True)
    pool.start()
    try:
        readiness = pool.readiness()
        assert [s.status for s in readiness.servers] == ["needs_auth"]
        assert readiness.ready and readiness.required_not_ready == []
    finally:
        await pool.stop()
