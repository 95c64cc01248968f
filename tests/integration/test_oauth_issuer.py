"""A pre-registered client's secret goes only to the authorization server that `auth.issuer`
names, for every grant that carries one (here the browser sign-in, `authorization_code`),
whatever the MCP server's metadata says; without `issuer` the start-up says so."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.test_oauth_ssrf import ALICE, app_with
from tests.integration.test_signin_routes import notice
from tests.support.harness import free_port, serve_app
from tests.support.servers.evil_oauth import evil_app

pytestmark = pytest.mark.timeout(180)  # each starts the app and real servers; the machine may be busy

CLIENT_SECRET = "pre-registered-secret-91"


def test_a_client_secret_never_goes_to_another_authorization_server(tmp_path):
    port, sent = free_port(), []
    own = f"http://127.0.0.1:{port}"
    auth = {
        "type": "oauth",
        "client_id": "switchboard",
        "client_secret": CLIENT_SECRET,
        "issuer": "https://login.example.com",
    }
    with serve_app(evil_app(own, own, "none", sent), port), app_with(tmp_path, f"{own}/mcp", auth) as (client, _s):
        start = client.get("/api/servers/evil/connect", headers=ALICE, follow_redirects=False)
        back = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
        done = client.get(f"/oauth/callback?{urlsplit(back).query}", headers=ALICE, follow_redirects=False)
        said = notice(client, done, ALICE)
        assert "the client secret was not sent" in said and "https://login.example.com" in said
        assert sent == []  # no token request at all, so the secret went nowhere


def test_without_issuer_the_start_up_warns(tmp_path, caplog):
    port = free_port()
    own = f"http://127.0.0.1:{port}"
    auth = {"type": "oauth", "client_id": "switchboard", "client_secret": CLIENT_SECRET}
    with serve_app(evil_app(own, own, "none"), port), app_with(tmp_path, f"{own}/mcp", auth):
        pass
    warned = [r for r in caplog.records if getattr(r, "event", None) == "oauth_no_issuer"]
    assert warned and warned[0].server == "evil" and "set 'auth.issuer'" in warned[0].getMessage()
    assert CLIENT_SECRET not in caplog.text
