"""A user's own server that signs in: Disconnect forgets the sign-in but not the server's headers
(they share the vault's (server, user) slot); a server that answers 401 with OAuth metadata is
added and signed in to with the Connect flow (the real OAuth test server of §9, allowed through
SWITCHBOARD_USER_SERVER_HOSTS)."""

from __future__ import annotations

import functools
import json

from switchboard.user_server_rows import HEADERS
from tests.integration.test_per_user_sessions import run_signin
from tests.support.harness import make_settings, running_app, write_config

SECRET = "user-server-signin-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}


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
