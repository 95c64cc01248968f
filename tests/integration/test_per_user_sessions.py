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
from tests.support.harness import double_model, free_port, make_settings, running_app, wait_for_port, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply
from tests.support.sinks import Sink

SIGNIN = Path(__file__).parents[1] / "support" / "servers" / "signin.py"


def run_signin(*args: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SIGNIN), *args, str(port)]
        if len(args) == 1
        else [sys.executable, str(SIGNIN), args[0], str(port), *args[1:]],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, "the sign-in server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def token_server() -> Iterator[str]:
    yield from run_signin("--token")


WHOAMI = ToolInfo(
    qualified_name="signin_whoami", server="signin", name="whoami", description="", input_schema={}, annotations={}
)


async def whoami(pool: ServerPool, user: str) -> dict[str, str]:
    outcome = await pool.call(WHOAMI, {}, Sink(), user=user)
    assert outcome.ok, outcome.text
    return outcome.results if isinstance(outcome.results, dict) else json.loads(outcome.text)


def make_pool(tmp_path, url: str, **extra) -> ServerPool:
    config = ServerConfig(url=url, auth={"type": "user_token"}, **extra)
    return ServerPool(
        McpConfig(servers={"signin": config}), project_root=tmp_path, log_dir=tmp_path / "logs", init_timeout_s=20
    )


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

        # once a user's session has listed them, the registry offers the server's tools to that user only
        assert pool.statuses()[0].status == "ready"
        assert {t.name for t in pool.registry.all("alice@x")} >= {"whoami", "echo"}
        assert [t for t in pool.registry.all("carol@x") if t.server == "signin"] == []
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


SECRET = "per-user-secret"


def as_user(email: str) -> dict[str, str]:
    return {"x-user-email": email, "x-proxy-secret": SECRET}


def listing(client, email: str) -> dict[str, object]:
    """What /api/config shows this user of the per-user server."""
    config = client.get("/api/config", headers=as_user(email)).json()
    server = next(s for s in config["servers"] if s["name"] == "signin")
    return {
        "status": server["status"],
        "tools": sorted(server["tools"]),
        "resources": [r["name"] for r in config["resources"] if r["server"] == "signin"],
        "prompts": [p["name"] for p in config["prompts"] if p["server"] == "signin"],
    }


def until_listed(client, email: str) -> dict[str, object]:
    import time

    deadline = time.monotonic() + 20
    while (seen := listing(client, email))["status"] != "ready" or not seen["tools"]:
        assert time.monotonic() < deadline, seen
        time.sleep(0.1)
    return seen


def chat(client, email: str, llm, tool: str) -> list[dict]:
    llm.enqueue(ToolCallReply([ToolCall(tool, "{}")]), TextReply("done"))
    with client.stream("POST", "/api/chat", json={"content": "who am I?"}, headers=as_user(email)) as response:
        assert response.status_code == 200
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def test_a_users_listing_of_a_per_user_server_is_shown_to_that_user_only(tmp_path, token_server, llm):
    write_config(
        tmp_path / "overrides",
        servers={"signin": {"url": token_server, "auth": {"type": "user_token"}, "approval": "never"}},
        models=[double_model(llm)],
        default_model="double",
    )
    settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)
    with running_app(settings) as (client, services):
        group = services.pool.connections["signin"]
        alice, bob = "alice@example.com", "bob@example.com"
        assert (
            client.put("/api/servers/signin/token", json={"token": "tok-alice"}, headers=as_user(alice)).status_code
            == 200
        )
        mine = until_listed(client, alice)
        assert mine == {
            "status": "ready",
            "tools": ["signin_echo", "signin_whoami"],
            "resources": ["my-notes"],
            "prompts": ["my-summary"],
        }

        # bob has not connected: the server waits for him, and he learns nothing of alice's session
        assert listing(client, bob) == {"status": "needs_auth", "tools": [], "resources": [], "prompts": []}
        assert "signin_whoami" not in {
            t["name"] for t in client.get("/api/config", headers=as_user(bob)).json()["tools"]
        }
        refused = next(e for e in chat(client, bob, llm, "signin_whoami") if e["type"] == "tool_result")
        assert not refused["ok"] and "signin_whoami" not in {
            t["function"]["name"] for t in llm.requests[-1].get("tools") or []
        }

        # a GET opens no session: after alice's closes, /api/config still shows her listing and opens nothing
        client.portal.call(group.close_user, alice)
        assert listing(client, alice) == mine and group.session_of(alice) is None
        assert listing(client, bob)["status"] == "needs_auth" and group.open_sessions == 0
        # her next turn opens it again, on her token
        result = next(e for e in chat(client, alice, llm, "signin_whoami") if e["type"] == "tool_result")
        assert result["ok"] and "tok-alice" in result["content"]

        # once bob connects he sees his own session's listing; disconnecting forgets it
        assert (
            client.put("/api/servers/signin/token", json={"token": "tok-bob"}, headers=as_user(bob)).status_code == 200
        )
        assert until_listed(client, bob)["resources"] == ["my-notes"]
        assert client.delete("/api/servers/signin/connection", headers=as_user(bob)).status_code == 200
        assert listing(client, bob) == {"status": "needs_auth", "tools": [], "resources": [], "prompts": []}
        assert listing(client, alice) == mine
