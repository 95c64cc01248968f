"""Machine-to-machine servers: the `client_credentials` grant against a real token endpoint
(a separate process), one shared token for every user, fetched again when it ends; the
client secret comes from the environment and never shows in /api/config or the logs."""

from __future__ import annotations

import functools
import json
import time

import pytest

from tests.integration.test_per_user_sessions import WHOAMI, run_signin
from tests.support.harness import make_settings, running_app, write_config
from tests.support.sinks import Sink

SECRET = "proxy-secret-for-tests"
CLIENT_SECRET = "svc-secret-0123456789"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}


@pytest.fixture
def machine_server():
    yield from run_signin("--machine", "--client-id", "svc", "--client-secret", CLIENT_SECRET, "--token-ttl", "3")


def app_with(tmp_path, url: str, secret: str):
    issuer = url.rsplit("/mcp", 1)[0]
    auth = {
        "type": "oauth",
        "grant": "client_credentials",
        "client_id": "svc",
        "client_secret": "${SVC_SECRET}",
        "issuer": issuer,
    }
    write_config(tmp_path / "defaults")
    write_config(tmp_path / "overrides", servers={"signin": {"url": url, "auth": auth}})
    settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)
    return running_app(settings, environ={"SVC_SECRET": secret})


def whoami(client, services, user: str) -> dict:
    outcome = client.portal.call(functools.partial(services.pool.call, WHOAMI, {}, Sink(), user=user))
    assert outcome.ok, outcome.text
    return outcome.results if isinstance(outcome.results, dict) else json.loads(outcome.text)


def test_client_credentials_token_is_shared_and_renewed(tmp_path, machine_server):
    with app_with(tmp_path, machine_server, CLIENT_SECRET) as (client, services):
        body = client.get("/api/config", headers=ALICE)
        entry = next(s for s in body.json()["servers"] if s["name"] == "signin")
        assert entry["status"] == "ready" and "auth" not in entry  # nothing for a user to connect
        alice = whoami(client, services, "alice@example.com")
        bob = whoami(client, services, "bob@example.com")
        assert alice["token"].startswith("m2m-") and bob["token"] == alice["token"]  # one shared session and token

        time.sleep(3.5)  # the token ended: the next call gets a new one with the client's credentials
        again = whoami(client, services, "alice@example.com")
        assert again["token"].startswith("m2m-") and again["token"] != alice["token"]

        assert CLIENT_SECRET not in body.text
    logged = "".join(p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*") if p.is_file())
    assert CLIENT_SECRET not in logged


def test_a_wrong_client_secret_fails_the_server_with_a_reason(tmp_path, machine_server):
    with app_with(tmp_path, machine_server, "not-the-secret") as (client, services):
        status = services.pool.connections["signin"].status
        assert status.status == "failed", status
        # the step and the OAuth error code; the rest of the answer only in the host's log
        assert "authorization server refused to give a token (HTTP 401, invalid_client)" in status.reason
        assert "not-the-secret" not in status.reason
