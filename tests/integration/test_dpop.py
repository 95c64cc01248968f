"""DPoP-bound tokens (RFC 9449) through the app's routes, against a real OAuth authorization
server and MCP server that require them (`signin.py --dpop`, fastmcp's in-memory OAuth server
behind `dpop_guard.py`): the tokens are bound to a key kept sealed with them, every token
request and every MCP request carries a valid proof, server nonces are answered with one retry,
and a token copied out of the host is worthless anywhere else."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from switchboard.tools.oauth.dpop import DPoPKey
from tests.integration.test_per_user_sessions import run_signin
from tests.integration.test_signin_routes import ALICE, app_with, call_whoami, sign_in

pytestmark = pytest.mark.timeout(180)  # each starts the app and a real server; the machine may be busy

USER = ALICE["X-User-Email"]


@pytest.fixture
def dpop_server():
    yield from run_signin("--dpop", "--token-ttl", "5")


@pytest.fixture
def nonce_server():
    yield from run_signin("--dpop", "--nonce", "--token-ttl", "5")


def seen(url: str) -> dict:
    """What the DPoP server saw (its own account of proofs, challenges and refusals)."""
    return httpx.get(url.replace("/mcp", "/dpop-log")).json()


def stored_credential(client, services) -> dict:
    return json.loads(client.portal.call(services.pool.vault.get, "signin", USER, "oauth_tokens"))


def test_sign_in_binds_the_tokens_to_a_sealed_key_and_every_request_carries_a_proof(tmp_path, dpop_server):
    with app_with(tmp_path, dpop_server, {"type": "oauth"}) as (client, services):
        done = sign_in(client, ALICE)
        assert done.headers["location"] == "/?connected=signin"
        first = call_whoami(client, services, USER)
        log = seen(dpop_server)
        assert log["refused"] == [] and log["grants"][0] == "authorization_code" and log["mcp_proofs"] >= 2

        # the token set is stored with the key it is bound to (the server bound it to that key's thumbprint)
        stored = stored_credential(client, services)
        key = DPoPKey.from_sealed(stored["dpop_key"])
        assert stored["token_type"] == "DPoP" and key.thumbprint() == log["jkts"][0]
        private = stored["dpop_key"]["jwk"]["d"]
        # ... sealed: not in clear in the database, not in /api/config, not in the logs
        rows = sqlite3.connect(tmp_path / "data" / "switchboard.db").execute("SELECT value FROM user_credentials")
        assert not any(private in value for (value,) in rows)
        assert private not in client.get("/api/config", headers=ALICE).text
        logs = [p.read_text(errors="replace") for p in Path(tmp_path).rglob("*") if p.suffix in (".jsonl", ".log")]
        assert logs and not any(private in text or first["token"] in text for text in logs)

        # a refresh (the token lives 5 s) is a token request with a proof of the same key
        time.sleep(6)
        client.portal.call(services.pool.connections["signin"].close_user, USER)
        after = call_whoami(client, services, USER)
        log = seen(dpop_server)
        assert after["token"] != first["token"] and "refresh_token" in log["grants"]
        assert log["refused"] == [] and set(log["jkts"]) == {key.thumbprint()}
        assert DPoPKey.from_sealed(stored_credential(client, services)["dpop_key"]).thumbprint() == key.thumbprint()


def test_server_nonces_are_answered_with_one_retry(tmp_path, nonce_server):
    with app_with(tmp_path, nonce_server, {"type": "oauth"}) as (client, services):
        assert sign_in(client, ALICE).headers["location"] == "/?connected=signin"
        call_whoami(client, services, USER)
        call_whoami(client, services, USER)
        log = seen(nonce_server)
        # the MCP server asked once; the retry and every request after it carried the nonce
        assert log["rs_challenges"] == 1 and log["mcp_proofs"] >= 3 and log["refused"] == []
        # a refresh in a new session (the token lives 5 s): asked for the nonce again, and answered
        time.sleep(6)
        client.portal.call(services.pool.connections["signin"].close_user, USER)
        call_whoami(client, services, USER)
        log = seen(nonce_server)
        assert log["grants"][0] == "authorization_code" and "refresh_token" in log["grants"]
        # each token request was refused once for want of the nonce, then carried it
        assert log["as_challenges"] == log["token_proofs"] == len(log["grants"])
        assert log["rs_challenges"] == 2 and log["refused"] == []


def test_a_stolen_access_token_replayed_from_elsewhere_is_refused(tmp_path, dpop_server):
    with app_with(tmp_path, dpop_server, {"type": "oauth"}) as (client, services):
        sign_in(client, ALICE)
        stolen = call_whoami(client, services, USER)["token"]
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        accept = {"Accept": "application/json, text/event-stream"}
        as_bearer = httpx.post(dpop_server, json=call, headers={**accept, "Authorization": f"Bearer {stolen}"})
        thief = DPoPKey.generate()
        own_proof = thief.proof("POST", dpop_server, access_token=stolen)
        with_own_key = httpx.post(
            dpop_server, json=call, headers={**accept, "Authorization": f"DPoP {stolen}", "DPoP": own_proof}
        )
        assert as_bearer.status_code == 401 and with_own_key.status_code == 401
        assert seen(dpop_server)["refused"] == [
            "a bound token presented as Bearer",
            "the proof's key is not the one the token is bound to",
        ]
        assert call_whoami(client, services, USER)["token"] == stolen  # the host itself goes on working
