"""Authorization as MCP 2026-07-28 has it: the authorization response's `iss` (RFC 9207),
credentials bound to the authorization server that issued them and never offered to another,
registration again when a server moves to another authorization server, `offline_access`
when offered, `application_type` in dynamic registration, and a resource that is not this
server refused in words a user understands."""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from contextlib import ExitStack
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from switchboard.config.models import ServerConfig
from switchboard.errors import NeedsAuth
from switchboard.tools.oauth.flow import SignIns
from switchboard.tools.oauth.vault import MemoryVault
from tests.integration.test_oauth_ssrf import ALICE, SECRET, app_with
from tests.integration.test_per_user_sessions import WHOAMI
from tests.integration.test_signin_routes import notice
from tests.support.harness import free_port, make_settings, running_app, serve_app
from tests.support.servers.evil_oauth import Knobs, evil_app
from tests.support.sinks import Sink

pytestmark = pytest.mark.timeout(180)  # each starts the app and real servers; the machine may be busy

USER = "alice@example.com"


def server(stack: ExitStack, knobs: Knobs, tokens: list | None = None) -> str:
    port = free_port()
    own = f"http://127.0.0.1:{port}"
    stack.enter_context(serve_app(evil_app(own, own, "none", tokens, knobs), port))
    return own


def sign_in(client) -> httpx.Response:
    start = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
    assert start.status_code == 302, start.headers
    back = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
    return client.get(f"/oauth/callback?{urlsplit(back).query}", headers=ALICE, follow_redirects=False)


def test_an_answer_from_another_issuer_is_refused(tmp_path):
    with ExitStack() as stack:
        own = server(stack, Knobs(iss="https://attacker.example"))
        client, _services = stack.enter_context(app_with(tmp_path, f"{own}/mcp", {"type": "oauth"}))
        said = notice(client, sign_in(client), ALICE)
        assert f"the answer did not come from {own}" in said and "mix-up" in said


def test_a_resource_that_is_not_this_server_is_refused(tmp_path):
    with ExitStack() as stack:
        own = server(stack, Knobs(resource="https://elsewhere.example/mcp"))
        client, _services = stack.enter_context(app_with(tmp_path, f"{own}/mcp", {"type": "oauth"}))
        answer = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        said = notice(client, answer, ALICE)
        assert "its sign-in information is for another server (https://elsewhere.example/mcp)" in said
        assert "never sent to another" in said


def test_offline_access_and_application_type(tmp_path):
    knobs = Knobs(scopes=["mcp", "offline_access"])
    with ExitStack() as stack:
        own = server(stack, knobs)
        client, _services = stack.enter_context(app_with(tmp_path, f"{own}/mcp", {"type": "oauth"}))
        start = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        query = parse_qs(urlsplit(start.headers["location"]).query)
        assert "offline_access" in query["scope"][0].split()
        assert knobs.registrations[0]["application_type"] == "native"  # its callback is on this machine


def test_application_type_is_web_for_a_public_https_callback():
    config = ServerConfig(url="https://mcp.example.com/mcp", auth={"type": "oauth"})
    public = SignIns(MemoryVault(), "https://chat.example.org/oauth/callback")
    local = SignIns(MemoryVault(), "http://127.0.0.1:8000/oauth/callback")
    assert public._metadata(config.auth).application_type == "web"  # type: ignore[arg-type]
    assert local._metadata(config.auth).application_type == "native"  # type: ignore[arg-type]


@pytest.mark.timeout(180)
def test_a_server_that_moves_to_another_authorization_server(tmp_path):
    """Signed in with A1; the server then names A2.  A1's refresh token goes only to A1, A2
    never sees A1's client or tokens, and the next Connect registers with A2."""
    moved, first_tokens, second_tokens = Knobs(), [], []
    with ExitStack() as stack:
        first = server(stack, Knobs(), first_tokens)
        second = server(stack, second_knobs := Knobs(), second_tokens)
        moved.authorization_server = first
        resource = server(stack, moved)
        auth = {"type": "oauth", "allow_private_endpoints": True}  # its authorization servers are on other ports
        client, services = stack.enter_context(app_with(tmp_path, f"{resource}/mcp", auth))
        vault = services.pool.vault
        assert sign_in(client).headers["location"] == "/?connected=evil"
        stored = json.loads(client.portal.call(vault.get, "evil", USER, "oauth_tokens"))
        registered = json.loads(client.portal.call(vault.get, "evil", USER, "oauth_client"))
        assert stored["issuer"] == f"{first}/" or stored["issuer"] == first  # keyed by its issuer
        assert registered["issuer"] in (first, f"{first}/") and registered["client_id"].endswith(
            first.rsplit(":", 1)[-1]
        )

        stored["expires_at"] = time.time() - 10  # expired: the next session refreshes first
        client.portal.call(vault.put, "evil", USER, "oauth_tokens", json.dumps(stored))
        moved.authorization_server = second
        client.portal.call(services.pool.connections["evil"].close_user, USER)
        tool = dataclasses.replace(WHOAMI, server="evil", qualified_name="evil_whoami")
        with pytest.raises(NeedsAuth):
            client.portal.call(functools.partial(services.pool.call, tool, {}, Sink(), user=USER))
        assert [t["grant_type"] for t in first_tokens] == ["authorization_code", "refresh_token"]  # its own issuer
        assert not any(t.get("refresh_token") for t in second_tokens)  # A1's refresh token never went to A2

        start = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        query = parse_qs(urlsplit(start.headers["location"]).query)
        assert start.headers["location"].startswith(f"{second}/authorize")
        assert query["client_id"][0].endswith(second.rsplit(":", 1)[-1])  # registered again, with A2
        assert second_knobs.registrations


def test_a_server_that_wants_more_scopes_needs_a_sign_in_not_a_failure(tmp_path):
    """A 403 insufficient_scope: the user's status is needs_auth with the scopes, and Connect is offered."""
    knobs = Knobs(scopes=["read"])
    with ExitStack() as stack:
        own = server(stack, knobs)
        client, services = stack.enter_context(app_with(tmp_path, f"{own}/mcp", {"type": "oauth"}))
        assert sign_in(client).headers["location"] == "/?connected=evil"
        _a_call_wants_more_scopes(client, services, knobs)
        entry = next(s for s in client.get("/api/config", headers=ALICE).json()["servers"] if s["name"] == "evil")
        assert entry["status"] == "needs_auth" and "read write" in entry["reason"], entry
        assert entry["auth"]["connected"] is False and entry["auth"]["connect_url"] == "/api/servers/evil/connect"
        assert "more permissions" in entry["auth"]["refused"]
        start = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        assert (
            "write" in parse_qs(urlsplit(start.headers["location"]).query)["scope"][0].split()
        )  # Connect asks for them


def _a_call_wants_more_scopes(client, services, knobs: Knobs) -> None:
    """The server starts answering 403 insufficient_scope ("read write"); the user's next call,
    on a fresh session, is refused with needs_auth naming it."""
    knobs.insufficient_scope = "read write"
    client.portal.call(services.pool.connections["evil"].close_user, USER)
    tool = dataclasses.replace(WHOAMI, server="evil", qualified_name="evil_whoami")
    with pytest.raises(NeedsAuth, match="more permissions"):
        client.portal.call(functools.partial(services.pool.call, tool, {}, Sink(), user=USER))


def _process(tmp_path, url: str, database_url: str):
    """An app on the shared Postgres (its relay reaches the other app's)."""
    app_with(tmp_path, url, {"type": "oauth"})  # writes the config
    return running_app(
        make_settings(
            tmp_path,
            auth_mode="proxy",
            proxy_secret=SECRET,
            database_url=database_url,
            secret_key="oauth-2026-shared-key-0123456789abcdef",
        )
    )


def test_a_step_up_asked_through_one_process_is_known_to_another(tmp_path, postgres_url):
    """The scopes a refused call asked for are kept in the store: the user's status and Connect
    through another app process ask for them too; the sign-in that grants them, finished there,
    closes the user's session on the first process (its next call opens one with the new token)."""
    knobs = Knobs(scopes=["read"])
    with ExitStack() as stack:
        own = server(stack, knobs)
        client, services = stack.enter_context(_process(tmp_path, f"{own}/mcp", postgres_url))
        other, _ = stack.enter_context(_process(tmp_path, f"{own}/mcp", postgres_url))
        assert sign_in(client).headers["location"] == "/?connected=evil"
        _a_call_wants_more_scopes(client, services, knobs)
        entry = next(s for s in other.get("/api/config", headers=ALICE).json()["servers"] if s["name"] == "evil")
        assert entry["status"] == "needs_auth" and "read write" in entry["reason"], entry
        start = other.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        assert "write" in parse_qs(urlsplit(start.headers["location"]).query)["scope"][0].split()
        knobs.insufficient_scope = None
        back = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
        assert (
            other.get(f"/oauth/callback?{urlsplit(back).query}", headers=ALICE, follow_redirects=False).headers[
                "location"
            ]
            == "/?connected=evil"
        )
        deadline = time.monotonic() + 10
        while True:  # the first process hears of the new sign-in and drops the old session
            entry = next(s for s in client.get("/api/config", headers=ALICE).json()["servers"] if s["name"] == "evil")
            if "more permissions" not in (entry.get("reason") or "") or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "more permissions" not in (entry.get("reason") or ""), entry
