"""A user's own server that signs in: Disconnect forgets the sign-in but not the server's headers
(they share the vault's (server, user) slot); a server that answers 401 with OAuth metadata is
added and signed in to with the Connect flow (the real OAuth test server of §9, allowed through
SWITCHBOARD_USER_SERVER_HOSTS)."""

from __future__ import annotations

import functools
import html
import json
import time
from urllib.parse import urlsplit

import httpx
import pytest

from switchboard.user_server_rows import HEADERS
from tests.integration.test_per_user_sessions import run_signin
from tests.support.harness import free_port, make_settings, running_app, serve_app, write_config
from tests.support.servers.evil_oauth import SECRET_BODY, evil_app, internal_app
from tests.support.sinks import Sink

SECRET = "user-server-signin-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}

pytestmark = pytest.mark.timeout(240)  # each starts the app and real servers; the machine is shared


def test_disconnect_forgets_the_sign_in_but_not_what_else_the_slot_keeps(tmp_path):
    """The vault keeps a user server's headers under (server, user), as it keeps their sign-in;
    Disconnect, and a refused token, forget the sign-in only."""
    for url in run_signin("--token"):
        write_config(tmp_path / "defaults")
        write_config(tmp_path / "overrides", servers={"signin": {"url": url, "auth": {"type": "user_token"}}})
        settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)
        with running_app(settings) as (client, services):
            vault, alice = services.pool.vault, "alice@example.com"
            client.portal.call(vault.put, "signin", alice, HEADERS, json.dumps({"X-Key": "k"}))
            put = client.put("/api/servers/signin/token", json={"token": "tok-alice"}, headers=ALICE)
            assert put.json()["connected"] is True, put.text
            gone = client.delete("/api/servers/signin/connection", headers=ALICE)
            assert gone.status_code == 200, gone.text
            assert client.portal.call(vault.get, "signin", alice, "token") is None
            assert client.portal.call(vault.get, "signin", alice, HEADERS) == json.dumps({"X-Key": "k"})
            refused = client.put("/api/servers/signin/token", json={"token": "not-a-token"}, headers=ALICE)
            assert refused.json()["connected"] is False, refused.text
            assert client.portal.call(vault.get, "signin", alice, HEADERS) == json.dumps({"X-Key": "k"})
            client.portal.call(functools.partial(vault.forget, "signin", alice))
            assert client.portal.call(vault.get, "signin", alice, HEADERS) is None  # removing the server: all


def _site(tmp_path):
    write_config(tmp_path / "defaults", groups={"*@example.com": ["users"]})
    values = {"auth_mode": "proxy", "proxy_secret": SECRET, "user_server_hosts": ["127.0.0.1"]}
    return running_app(make_settings(tmp_path, **values))


def _mine(client, headers=ALICE) -> dict[str, dict]:
    answer = client.get("/api/servers", headers=headers)
    assert answer.status_code == 200, answer.text
    return {s["name"]: s for s in answer.json()["servers"]}


def _until(check, timeout_s: float = 60):
    deadline = time.monotonic() + timeout_s
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def _browser_leg(client, connect_url: str, headers) -> httpx.Response:
    """Connect -> the authorization server (it approves at once) -> the callback."""
    start = client.get(connect_url, headers=headers, follow_redirects=False)
    assert start.status_code == 302, start.text
    answer = httpx.get(start.headers["location"], follow_redirects=False)
    assert answer.status_code in (302, 303, 307), answer.text
    back = urlsplit(answer.headers["location"])
    assert back.path == "/oauth/callback"
    return client.get(f"/oauth/callback?{back.query}", headers=headers, follow_redirects=False)


def test_a_server_that_asks_for_sign_in_is_added_and_its_owner_signs_in_with_connect(tmp_path):
    for url in run_signin("--oauth"):
        with _site(tmp_path) as (client, services):
            added = client.post(
                "/api/servers", json={"name": "notes", "url": url, "headers": {"X-Extra": "kept"}}, headers=ALICE
            )
            assert added.status_code == 201, added.text
            server, sign_in = added.json()["server"], added.json()["sign_in"]
            assert sign_in["connected"] is False and sign_in["connect_url"] == f"/api/servers/{server}/connect"
            listed = _mine(client)["notes"]
            assert listed["status"] == "needs_auth" and listed["sign_in"]["connected"] is False, listed
            # only its owner may sign in to it
            assert client.get(sign_in["connect_url"], headers=BOB, follow_redirects=False).status_code == 404

            done = _browser_leg(client, sign_in["connect_url"], ALICE)
            assert done.status_code == 303 and done.headers["location"] == f"/?connected={server}", done.text
            tools = _until(lambda: client.get("/api/servers/notes/tools", headers=ALICE).json()["tools"])
            assert {t["tool"] for t in tools} >= {"whoami", "echo"} and all(t["state"] == "pending" for t in tools)
            listed = _mine(client)["notes"]
            assert listed["status"] == "ready" and listed["sign_in"]["connected"] is True, listed
            assert client.portal.call(services.pool.vault.get, server, "alice@example.com", "oauth_tokens")

            whoami = next(t for t in tools if t["tool"] == "whoami")
            approved = client.post(
                "/api/servers/notes/tools/whoami/approve", json={"pin": whoami["pin"]}, headers=ALICE
            )
            assert approved.status_code == 200, approved.text
            call = functools.partial(services.pool.call, _tool(services, server), {}, Sink(), user="alice@example.com")
            outcome = client.portal.call(call)
            assert outcome.ok and "token" in outcome.text, outcome.text

            # Disconnect forgets the sign-in, not the server's headers
            gone = client.delete(sign_in["disconnect_url"], headers=ALICE)
            assert gone.status_code == 200, gone.text
            listed = _mine(client)["notes"]
            assert listed["sign_in"]["connected"] is False and listed["headers"] == ["X-Extra"], listed
            assert services.pool.server_config(server).headers == {"X-Extra": "kept"}


def _tool(services, server: str):
    return next(t for t in services.pool.registry.every_tool() if t.server == server and t.name == "whoami")


def test_a_user_servers_sign_in_is_held_to_the_endpoint_policy(tmp_path):
    """Its host is allowed (127.0.0.1 through SWITCHBOARD_USER_SERVER_HOSTS), but only its own origin:
    an authorization server its metadata names elsewhere on the host's network is never contacted."""
    app, hits = internal_app()
    with serve_app(app, free_port()) as internal_url:
        port = free_port()
        own = f"http://127.0.0.1:{port}"
        with serve_app(evil_app(own, internal_url, "as"), port), _site(tmp_path) as (client, _services):
            added = client.post("/api/servers", json={"name": "evil", "url": f"{own}/mcp"}, headers=ALICE)
            assert added.status_code == 201, added.text
            start = client.get(added.json()["sign_in"]["connect_url"], headers=ALICE, follow_redirects=False)
            assert start.status_code == 303 and "signin_notice" in start.headers["location"], start.text
            page = client.get(start.headers["location"], headers=ALICE).text
            assert "loopback, link-local or private" in html.unescape(page) and SECRET_BODY not in page
            assert hits == []  # not one request reached it
