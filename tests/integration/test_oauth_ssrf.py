"""SSRF through OAuth discovery: a remote MCP server chooses the URLs of its sign-in (its 401
names the resource metadata, that names the authorization server, whose metadata names the
registration and token endpoints).  Aimed at a service only the host can reach (here on
another loopback port), the host must refuse every step, on every path that runs the flow
(Connect, the callback's token exchange, re-discovery when a session gets a 401, the
client_credentials start-up), unless the operator allows it for that server; and the
internal service's answer never reaches a user, not even when it is allowed."""

from __future__ import annotations

import dataclasses
import functools
import json
from urllib.parse import urlsplit

import httpx
import pytest

from switchboard.errors import NeedsAuth
from tests.integration.test_per_user_sessions import WHOAMI
from tests.integration.test_signin_routes import notice
from tests.support.harness import free_port, make_settings, running_app, serve_app, write_config
from tests.support.servers.evil_oauth import SECRET_BODY, evil_app, internal_app
from tests.support.sinks import Sink

pytestmark = pytest.mark.timeout(180)  # each starts the app and real servers; the machine may be busy

SECRET = "proxy-secret-for-tests"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
ADMIN = {"X-User-Email": "root@example.com", "X-Proxy-Secret": SECRET}


@pytest.fixture
def internal():
    app, hits = internal_app()
    with serve_app(app, free_port()) as url:
        yield url, hits


def evil(internal_url: str, aim: str):
    port = free_port()
    own = f"http://127.0.0.1:{port}"
    return serve_app(evil_app(own, internal_url, aim), port)


def app_with(tmp_path, url: str, auth: dict):
    write_config(tmp_path / "defaults")
    write_config(
        tmp_path / "overrides",
        servers={"evil": {"url": url, "auth": auth}},
        groups={"root@example.com": ["users", "admin"], "*": ["users"]},
    )
    return running_app(make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET))


@pytest.mark.parametrize("aim", ["prm", "as", "register"])
def test_connect_never_reaches_an_internal_address(tmp_path, internal, aim):
    internal_url, hits = internal
    with evil(internal_url, aim) as base, app_with(tmp_path, f"{base}/mcp", {"type": "oauth"}) as (client, _services):
        answer = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        said = notice(client, answer, ALICE)
        assert "loopback, link-local or private" in said and internal_url in said
        assert hits == []  # not one request reached it
        assert SECRET_BODY not in said


def test_the_callback_token_exchange_never_reaches_an_internal_address(tmp_path, internal):
    internal_url, hits = internal
    with (
        evil(internal_url, "token") as base,
        app_with(tmp_path, f"{base}/mcp", {"type": "oauth"}) as (client, _services),
    ):
        start = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        assert start.status_code == 302 and start.headers["location"].startswith(f"{base}/authorize")
        back = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
        done = client.get(f"/oauth/callback?{urlsplit(back).query}", headers=ALICE, follow_redirects=False)
        said = notice(client, done, ALICE)
        assert "loopback, link-local or private" in said and SECRET_BODY not in said
        assert hits == []


def test_rediscovery_on_a_401_never_reaches_an_internal_address(tmp_path, internal):
    """A user who has tokens: the server answers 401 and names metadata on an internal address."""
    internal_url, hits = internal
    with evil(internal_url, "prm") as base, app_with(tmp_path, f"{base}/mcp", {"type": "oauth"}) as (client, services):
        stored = {"token": {"access_token": "old", "token_type": "Bearer"}, "expires_at": None}
        client.portal.call(services.pool.vault.put, "evil", "alice@example.com", "oauth_tokens", json.dumps(stored))
        tool = dataclasses.replace(WHOAMI, server="evil", qualified_name="evil_whoami")
        call = functools.partial(services.pool.call, tool, {}, Sink(), user="alice@example.com")
        with pytest.raises(NeedsAuth) as refused:
            client.portal.call(call)
        assert SECRET_BODY not in refused.value.message
        assert hits == []
        config = client.get("/api/config", headers=ALICE).text
        assert SECRET_BODY not in config


@pytest.mark.parametrize("aim", ["as", "token"])
def test_client_credentials_start_up_never_reaches_an_internal_address(tmp_path, internal, aim):
    internal_url, hits = internal
    auth = {"type": "oauth", "grant": "client_credentials", "client_id": "svc", "client_secret": "s3cret"}
    with evil(internal_url, aim) as base, app_with(tmp_path, f"{base}/mcp", auth) as (client, services):
        status = services.pool.connections["evil"].status
        assert status.status == "failed" and "loopback, link-local or private" in status.reason, status
        assert hits == []
        for route in ("/readyz", "/api/config"):
            text = client.get(route, headers=ADMIN).text  # an administrator sees the reasons
            assert "loopback, link-local or private" in text and SECRET_BODY not in text


def test_allowed_private_endpoints_are_used_but_their_answer_stays_in_the_log(tmp_path, internal):
    """The operator allows it (an authorization server in their own network): the host goes
    there, and the answer (an error with a body) still never reaches the user."""
    internal_url, hits = internal
    auth = {
        "type": "oauth",
        "grant": "client_credentials",
        "client_id": "svc",
        "client_secret": "s3cret",
        "allow_private_endpoints": True,
    }
    with evil(internal_url, "token") as base, app_with(tmp_path, f"{base}/mcp", auth) as (client, services):
        status = services.pool.connections["evil"].status
        assert hits and hits[0] == "POST /token"
        assert status.status == "failed" and "refused to give a token (HTTP 500, server_error)" in status.reason
        for route in ("/readyz", "/api/config"):
            assert SECRET_BODY not in client.get(route, headers=ADMIN).text
    logged = "".join(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*.jsonl"))
    assert "refused to give a token" in logged  # the administrators' excerpt
