"""A user's own remote servers (`/api/servers`): a real toolbox over streamable HTTP on 127.0.0.1
(allowed through SWITCHBOARD_USER_SERVER_HOSTS). Only its owner lists, sees and calls it; it
starts in review and its owner approves its tools; its headers are sealed in the vault; every bad
input is refused with a clear message and changes nothing."""

from __future__ import annotations

import asyncio
import asyncio.base_events
import http.server
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from switchboard import user_servers
from switchboard.errors import ToolNotAllowed
from switchboard.identity.access import Access
from switchboard.identity.users import User
from tests.support.harness import free_port, make_settings, run_toolbox_server, running_app, toolbox_entry, write_config

SECRET = "user-servers-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
TOKEN = "sealed-header-value-4711"


def _site(tmp, **settings):
    if not (tmp / "defaults").exists():
        write_config(
            tmp / "defaults",
            servers={"toolbox": toolbox_entry()},
            groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
        )
    values = {"auth_mode": "proxy", "proxy_secret": SECRET, "user_server_hosts": ["127.0.0.1"], **settings}
    return running_app(make_settings(tmp, **values))


def _mine(client, headers) -> dict[str, dict]:
    answer = client.get("/api/servers", headers=headers)
    assert answer.status_code == 200, answer.text
    return {s["name"]: s for s in answer.json()["servers"]}


def _config_servers(client, headers) -> set[str]:
    return {s["name"] for s in client.get("/api/config", headers=headers).json()["servers"]}


def _tools(client, name: str, headers=ALICE, timeout_s: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = client.get(f"/api/servers/{name}/tools", headers=headers)
        assert answer.status_code == 200, answer.text
        if answer.json()["tools"] or time.monotonic() > deadline:
            return answer.json()["tools"]
        time.sleep(0.1)


def _user(email: str) -> User:
    return User(email=email, groups=frozenset({"users"}))


def test_only_its_owner_lists_sees_approves_and_calls_a_users_server(tmp_path):
    with run_toolbox_server("http") as url, _site(tmp_path) as (client, services):
        added = client.post(
            "/api/servers", json={"name": "mine", "url": url, "headers": {"X-Token": TOKEN}}, headers=ALICE
        )
        assert added.status_code == 201, added.text
        server = added.json()["server"]
        assert added.json()["trust"] == "review" and server.startswith("mine.") and server != "mine"
        listed = _mine(client, ALICE)["mine"]
        assert listed["url"] == url and listed["headers"] == ["X-Token"] and TOKEN not in str(listed)
        assert services.pool.server_config(server).headers == {"X-Token": TOKEN}
        stored = b"".join(p.read_bytes() for p in (tmp_path / "data").glob("switchboard.db*"))
        assert TOKEN.encode() not in stored, "the header is sealed at rest"

        tools = _tools(client, "mine")
        assert tools and all(t["state"] == "pending" and t["server"] == server for t in tools)
        echo = next(t for t in tools if t["tool"] == "echo")
        stale = client.post("/api/servers/mine/tools/echo/approve", json={"pin": "0" * 16}, headers=ALICE)
        assert stale.status_code == 409, stale.text
        ok = client.post("/api/servers/mine/tools/echo/approve", json={"pin": echo["pin"]}, headers=ALICE)
        assert ok.status_code == 200 and ok.json()["state"] == "approved", ok.text
        assert services.pool.registry.authorize(echo["name"], Access(_user("alice@example.com"))).name == "echo"

        # Bob never meets it: not in his list, not in /api/config, not by name, not through its routes
        assert _mine(client, BOB) == {}
        assert server in _config_servers(client, ALICE) and server not in _config_servers(client, BOB)
        with pytest.raises(ToolNotAllowed):
            services.pool.registry.authorize(echo["name"], Access(_user("bob@example.com")))
        assert client.get("/api/servers/mine/tools", headers=BOB).status_code == 404
        refused = client.post("/api/servers/mine/tools/echo/approve", json={"pin": echo["pin"]}, headers=BOB)
        assert refused.status_code == 404
        assert client.delete("/api/servers/mine", headers=BOB).status_code == 404

        # Bob's server of the same name is another server
        again = client.post("/api/servers", json={"name": "mine", "url": url}, headers=BOB)
        assert again.status_code == 201, again.text
        assert again.json()["server"] not in (server, "mine")
        assert _mine(client, ALICE)["mine"]["server"] == server

        # the console lists it with its owner
        listed_all = {s["name"]: s for s in client.get("/api/admin/servers", headers=ADMIN).json()["servers"]}
        assert listed_all[server]["source"] == "user:alice@example.com"
        off = client.patch(f"/api/admin/servers/{server}", json={"enabled": False}, headers=ADMIN)
        assert off.status_code == 200, off.text
        assert _mine(client, ALICE)["mine"]["enabled"] is False and not services.pool.server_config(server).enabled
        bobs = again.json()["server"]
        assert client.delete(f"/api/admin/servers/{bobs}", headers=ADMIN).status_code == 204
        assert _mine(client, BOB) == {} and bobs not in services.pool.mcp.servers

        assert client.delete("/api/servers/mine", headers=ALICE).status_code == 204
        assert _mine(client, ALICE) == {} and server not in services.pool.mcp.servers
        records = client.get("/api/admin/audit?kind=user_server&limit=100", headers=ADMIN).json()["records"]
    alices = {r["action"]: r for r in records if r["user"] == "alice@example.com"}
    assert set(alices) == {"server_add", "tool_approve", "server_remove"} and {r["server"] for r in records} >= {server}
    assert alices["tool_approve"]["pin"] == echo["pin"] and TOKEN not in str(records)


@contextmanager
def _not_mcp() -> Iterator[str]:
    """A web server that answers every request with a page, not MCP."""

    class Page(http.server.BaseHTTPRequestHandler):
        def _page(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html>welcome</html>")

        do_GET = do_POST = _page

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()


def test_a_name_that_moves_to_a_private_address_after_the_check_is_not_followed(tmp_path, monkeypatch):
    """DNS rebinding: `rebind.example` answers a public address to the endpoint policy's check,
    then 127.0.0.1, where a real MCP server listens. The connection goes only to an address the
    policy checked, so the server is refused (without the guard it would be added)."""
    import socket

    real, real_sync = asyncio.base_events.BaseEventLoop.getaddrinfo, socket.getaddrinfo
    asked: list[str] = []

    def answer(host, port):
        asked.append(host)
        address = "93.184.215.14" if len(asked) == 1 else "127.0.0.1"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]

    def rebinds(host) -> bool:  # anyio (the connection's lookup) asks with the name IDNA-encoded, as bytes
        return (host.decode() if isinstance(host, bytes) else host) == "rebind.example"

    async def getaddrinfo(self, host, port, *args, **kwargs):
        return answer(host, port) if rebinds(host) else await real(self, host, port, *args, **kwargs)

    def getaddrinfo_sync(host, port, *args, **kwargs):
        return answer(host, port) if rebinds(host) else real_sync(host, port, *args, **kwargs)

    monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo_sync)
    with run_toolbox_server("http") as url, _site(tmp_path, user_server_hosts=[]) as (client, _):
        moved = url.replace("127.0.0.1", "rebind.example")
        answer = client.post("/api/servers", json={"name": "moved", "url": moved}, headers=ALICE)
        assert answer.status_code == 400, answer.text
        message = answer.json()["error"]["message"]
        assert "did not answer as an MCP server" in message and "loopback" in message, message
        assert len(asked) >= 2 and _mine(client, ALICE) == {}


def test_bad_input_is_refused_clearly_and_changes_nothing(tmp_path, monkeypatch):
    with run_toolbox_server("http") as url, _not_mcp() as page, _site(tmp_path, max_servers_per_user=1) as (client, _):
        before = {name: s["source"] for name, s in _servers_all(client).items()}
        bad = [
            ({"name": "x", "url": url, "command": "python"}, 400, ["field 'command'", "unknown field"]),
            ({"name": "x", "url": url, "transport": "stdio"}, 400, ["field 'transport'", "never a command"]),
            ({"name": "toolbox", "url": url}, 409, ["field 'name'", "has a server named 'toolbox'"]),
            ({"name": "bad name!", "url": url}, 400, ["field 'name'"]),
            ({"name": "x", "url": "http://169.254.169.254/mcp"}, 400, ["field 'url'", "endpoint policy", "link-local"]),
            ({"name": "x", "url": "http://localhost:9/mcp"}, 400, ["field 'url'", "endpoint policy", "loopback"]),
            ({"name": "x", "url": "file:///etc/passwd"}, 400, ["field 'url'", "not an http(s) address"]),
            ({"name": "x", "url": f"http://127.0.0.1:{free_port()}/mcp"}, 400, ["did not answer as an MCP server"]),
            ({"name": "x", "url": page}, 400, ["did not answer as an MCP server"]),
        ]
        for body, status, words in bad:
            answer = client.post("/api/servers", json=body, headers=ALICE)
            assert answer.status_code == status, (body, answer.text)
            message = answer.json()["error"]["message"]
            assert all(word in message for word in words), (body, message)
        monkeypatch.setattr(user_servers, "MAX_TOOLS", 3)
        many = client.post("/api/servers", json={"name": "x", "url": url}, headers=ALICE)
        assert many.status_code == 400 and "at most 3" in many.json()["error"]["message"], many.text
        monkeypatch.undo()
        assert _mine(client, ALICE) == {}
        assert {name: s["source"] for name, s in _servers_all(client).items()} == before
        assert client.post("/api/servers", json={"name": "x", "url": url}, headers=ALICE).status_code == 201
        over = client.post("/api/servers", json={"name": "y", "url": url}, headers=ALICE)
        assert over.status_code == 409 and "(1)" in over.json()["error"]["message"], over.text


def _servers_all(client) -> dict[str, dict]:
    return {s["name"]: s for s in client.get("/api/admin/servers", headers=ADMIN).json()["servers"]}


def test_switched_off_user_servers_are_refused_with_a_clear_message(tmp_path):
    with _site(tmp_path, user_servers="off") as (client, _):
        answer = client.post("/api/servers", json={"name": "x", "url": "https://example.com/mcp"}, headers=ALICE)
        assert answer.status_code == 403 and "switched off" in answer.json()["error"]["message"]
        assert client.get("/api/servers", headers=ALICE).status_code == 403
