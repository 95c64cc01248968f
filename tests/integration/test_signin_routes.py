"""Signing in to remote MCP servers through the app's routes, against real servers:
OAuth 2.1 (the SDK's client against fastmcp's in-memory authorization server: discovery,
dynamic registration, PKCE, refresh), the browser leg driven with httpx, and
user-entered tokens; two users never share a token, a session or a sign-in."""

from __future__ import annotations

import functools
import html
import json
import re
import sqlite3
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from switchboard.errors import NeedsAuth
from tests.integration.test_per_user_sessions import WHOAMI, Sink, run_signin
from tests.support.harness import make_settings, running_app, write_config

SECRET = "proxy-secret-for-tests"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
BOB = {"X-User-Email": "bob@example.com", "X-Proxy-Secret": SECRET}


@pytest.fixture
def oauth_server():
    yield from run_signin("--oauth", "--token-ttl", "5")


@pytest.fixture
def token_server():
    yield from run_signin("--token")


def app_with(tmp_path, url: str, auth: dict):
    write_config(tmp_path / "defaults")
    write_config(tmp_path / "overrides", servers={"signin": {"url": url, "auth": auth}})
    return running_app(make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET))


def server_entry(client, headers) -> dict:
    body = client.get("/api/config", headers=headers).json()
    return next(s for s in body["servers"] if s["name"] == "signin")


def sign_in(client, headers) -> httpx.Response:
    """The browser leg: connect -> the authorization server (approves at once) -> callback."""
    start = client.get("/api/servers/signin/connect", headers=headers, follow_redirects=False)
    assert start.status_code == 302, start.text
    authorize = start.headers["location"]
    assert parse_qs(urlsplit(authorize).query)["code_challenge_method"] == ["S256"]
    assert "resource" in parse_qs(urlsplit(authorize).query)
    answer = httpx.get(authorize, follow_redirects=False)
    assert answer.status_code in (302, 303, 307), answer.text
    back = urlsplit(answer.headers["location"])
    assert back.path == "/oauth/callback"
    return client.get(f"/oauth/callback?{back.query}", headers=headers, follow_redirects=False)


def notice(client, answer: httpx.Response, headers) -> str:
    """A sign-in that did not work goes back to the chat page, which says why (signed, for this user only)."""
    assert answer.status_code == 303, answer.text
    location = answer.headers["location"]
    assert location.startswith("/?signin_notice=")
    page = client.get(location, headers=headers)
    assert page.status_code == 200
    found = re.search(r'<p id="signin-notice"[^>]*><span>(.*?)</span>', page.text, re.S)
    assert found, "the page shows no sign-in notice"
    return html.unescape(found.group(1))


def call_whoami(client, services, user: str) -> dict:
    outcome = client.portal.call(functools.partial(services.pool.call, WHOAMI, {}, Sink(), user=user))
    assert outcome.ok, outcome.text
    return outcome.results if isinstance(outcome.results, dict) else json.loads(outcome.text)


def test_oauth_sign_in_per_user_with_refresh_and_disconnect(tmp_path, oauth_server):
    with app_with(tmp_path, oauth_server, {"type": "oauth"}) as (client, services):
        before = server_entry(client, ALICE)
        assert before["status"] == "needs_auth"
        assert before["auth"] == {
            "type": "oauth",
            "connected": False,
            "connect_url": "/api/servers/signin/connect",
            "disconnect_url": "/api/servers/signin/connection",
        }
        assert client.get("/readyz").status_code == 200  # needs_auth is not a failure
        with pytest.raises(NeedsAuth, match="press Connect"):
            client.portal.call(functools.partial(services.pool.call, WHOAMI, {}, Sink(), user="alice@example.com"))

        done = sign_in(client, ALICE)
        assert done.status_code == 303 and done.headers["location"] == "/?connected=signin"
        assert server_entry(client, ALICE)["auth"]["connected"] is True
        first = call_whoami(client, services, "alice@example.com")
        assert first["token"]

        # Bob is not signed in by Alice's sign-in, and cannot use it
        assert server_entry(client, BOB)["auth"]["connected"] is False
        with pytest.raises(NeedsAuth):
            client.portal.call(functools.partial(services.pool.call, WHOAMI, {}, Sink(), user="bob@example.com"))
        assert sign_in(client, BOB).status_code == 303
        bob = call_whoami(client, services, "bob@example.com")
        assert bob["token"] != first["token"]

        # the token never leaves: not in /api/config, not in clear in the database
        for headers in (ALICE, BOB):
            text = client.get("/api/config", headers=headers).text
            assert first["token"] not in text and bob["token"] not in text
        db = sqlite3.connect(tmp_path / "data" / "switchboard.db")
        rows = db.execute("SELECT user, kind, value FROM user_credentials").fetchall()
        assert {(u, k) for u, k, _ in rows} >= {
            ("alice@example.com", "oauth_tokens"),
            ("bob@example.com", "oauth_tokens"),
        }
        assert not any(first["token"] in v or bob["token"] in v for _, _, v in rows)

        # refresh: the access token lives 5 s; the next call gets a new one without a sign-in
        time.sleep(6)
        client.portal.call(services.pool.connections["signin"].close_user, "alice@example.com")
        after = call_whoami(client, services, "alice@example.com")
        assert after["token"] and after["token"] != first["token"]

        gone = client.delete("/api/servers/signin/connection", headers=ALICE)
        assert gone.json() == {"server": "signin", "connected": False}
        assert server_entry(client, ALICE)["status"] == "needs_auth"
        assert call_whoami(client, services, "bob@example.com")["token"]  # Bob is untouched


def test_state_is_bound_to_its_user_and_used_once(tmp_path, oauth_server):
    with app_with(tmp_path, oauth_server, {"type": "oauth"}) as (client, services):
        start = client.get("/api/servers/signin/connect", headers=ALICE, follow_redirects=False)
        answer = httpx.get(start.headers["location"], follow_redirects=False)
        query = urlsplit(answer.headers["location"]).query
        # CSRF: Bob's browser is sent to the callback with Alice's code and state
        refused = client.get(f"/oauth/callback?{query}", headers=BOB, follow_redirects=False)
        assert "started by another user" in notice(client, refused, BOB)
        assert server_entry(client, BOB)["auth"]["connected"] is False
        # the state was burnt: Alice cannot replay it either
        replay = client.get(f"/oauth/callback?{query}", headers=ALICE, follow_redirects=False)
        assert "Connect again" in notice(client, replay, ALICE)
        assert server_entry(client, ALICE)["auth"]["connected"] is False
        unknown = client.get("/oauth/callback?state=made-up&code=x", headers=ALICE, follow_redirects=False)
        assert "unknown" in notice(client, unknown, ALICE)


def test_user_entered_tokens_through_the_routes(tmp_path, token_server):
    with app_with(tmp_path, token_server, {"type": "user_token"}) as (client, services):
        entry = server_entry(client, ALICE)
        assert entry["status"] == "needs_auth" and entry["auth"]["type"] == "user_token"
        assert (
            client.put("/api/servers/signin/token", json={"token": "bad token\r\nX: 1"}, headers=ALICE).status_code
            == 422
        )
        assert client.put("/api/servers/signin/token", json={"token": "tok-alice-secret"}, headers=ALICE).json() == {
            "server": "signin",
            "connected": True,
        }
        assert call_whoami(client, services, "alice@example.com")["token"] == "tok-alice-secret"
        assert "tok-alice-secret" not in client.get("/api/config", headers=ALICE).text
        assert server_entry(client, BOB)["auth"]["connected"] is False
        with pytest.raises(NeedsAuth):
            client.portal.call(functools.partial(services.pool.call, WHOAMI, {}, Sink(), user="bob@example.com"))
        db = sqlite3.connect(tmp_path / "data" / "switchboard.db")
        assert not any("tok-alice-secret" in v for (v,) in db.execute("SELECT value FROM user_credentials"))
        assert client.delete("/api/servers/signin/connection", headers=ALICE).json()["connected"] is False
        with pytest.raises(NeedsAuth):
            client.portal.call(functools.partial(services.pool.call, WHOAMI, {}, Sink(), user="alice@example.com"))


def test_a_chat_call_before_connecting_tells_the_user_to_connect(tmp_path, token_server, llm):
    """Through the whole loop: Bob, not connected, is not offered what Alice's session listed, and his
    page shows the server as needing his sign-in; Alice's call runs on her own session."""
    from tests.support.harness import double_model, until
    from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

    write_config(tmp_path / "defaults", models=[double_model(llm)], default_model="double")
    write_config(
        tmp_path / "overrides",
        servers={"signin": {"url": token_server, "auth": {"type": "user_token"}}},
        models=[double_model(llm)],
        default_model="double",
    )
    with running_app(make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)) as (client, _services):
        client.put("/api/servers/signin/token", json={"token": "tok-alice-own"}, headers=ALICE)
        deadline = time.monotonic() + 30
        while "signin_whoami" not in {t["name"] for t in client.get("/api/config", headers=ALICE).json()["tools"]}:
            assert time.monotonic() < deadline, "the server's tools were never listed"
            time.sleep(0.2)

        def run_as(headers) -> dict:
            llm.enqueue(ToolCallReply([ToolCall("signin_whoami", "{}")]), TextReply("done"))
            with client.websocket_connect("/ws", headers=headers) as ws:
                ws.receive_json()
                ws.send_json({"type": "chat", "content": "who am I?"})
                events = until(ws, "message_done")
            return next(e for e in events if e["type"] == "tool_result")

        bob = run_as(BOB)
        assert bob["ok"] is False and "not offered" in bob["content"] and "tok-alice" not in bob["content"]
        server = next(s for s in client.get("/api/config", headers=BOB).json()["servers"] if s["name"] == "signin")
        assert server["status"] == "needs_auth" and server["auth"]["connected"] is False
        alice = run_as(ALICE)
        assert alice["ok"] is True and "tok-alice-own" in alice["content"]


@pytest.mark.timeout(180)
def test_client_id_metadata_document_is_served_from_the_public_url(tmp_path):
    write_config(tmp_path / "defaults")
    write_config(tmp_path / "overrides")
    public = make_settings(tmp_path, public_url="https://chat.example.org/")
    assert public.client_metadata_url == "https://chat.example.org/oauth/client-metadata.json"
    with running_app(public) as (client, _services):
        answer = client.get("/oauth/client-metadata.json")  # no user: authorization servers fetch it
        assert answer.status_code == 200
        assert answer.json() == {
            "client_id": "https://chat.example.org/oauth/client-metadata.json",
            "client_name": "Switchboard",
            "redirect_uris": ["https://chat.example.org/oauth/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    assert (
        make_settings(tmp_path, public_url="https://chat.example.org", oauth_client_metadata=False).client_metadata_url
        is None
    )
    # plain http cannot be a client ID: no document, and sign-ins register the client instead
    plain = make_settings(tmp_path, public_url="http://chat.example.org")
    assert plain.client_metadata_url is None
    with running_app(plain) as (client, _services):
        assert client.get("/oauth/client-metadata.json").status_code == 404
