"""Pending OAuth sign-ins (between Connect and the callback) live in the shared store: one per
(user, server), the newest replacing the older, encrypted, and holding nothing open in the
process; so a callback finishes on any app process built on the same database."""

from __future__ import annotations

import functools
import os
import sqlite3
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.integration.test_per_user_sessions import WHOAMI, run_signin
from tests.integration.test_signin_routes import ALICE, BOB, SECRET, notice
from tests.support.harness import make_settings, running_app, write_config
from tests.support.sinks import Sink


@pytest.fixture
def oauth_server():
    yield from run_signin("--oauth")


def configure(tmp_path, url: str) -> None:
    write_config(tmp_path / "defaults")
    write_config(tmp_path / "overrides", servers={"signin": {"url": url, "auth": {"type": "oauth"}}})


def connect(client, headers) -> str:
    """Press Connect; returns where the authorization server sends the browser back."""
    start = client.get("/api/servers/signin/connect", headers=headers, follow_redirects=False)
    assert start.status_code == 302, start.text
    answer = httpx.get(start.headers["location"], follow_redirects=False)
    return urlsplit(answer.headers["location"]).query


@pytest.mark.timeout(240)
def test_one_pending_sign_in_per_user_and_server_the_newest_wins(tmp_path, oauth_server):
    configure(tmp_path, oauth_server)
    with running_app(make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)) as (client, _services):
        files_before = len(os.listdir("/proc/self/fd"))
        backs = [connect(client, ALICE) for _ in range(12)]
        connect(client, BOB)
        assert len(os.listdir("/proc/self/fd")) - files_before < 10  # nothing left open per sign-in
        db = sqlite3.connect(tmp_path / "data" / "switchboard.db")
        rows = db.execute("SELECT user, value FROM oauth_pending").fetchall()
        assert sorted(user for user, _ in rows) == ["alice@example.com", "bob@example.com"]
        state = parse_qs(backs[-1])["state"][0]
        assert all(state not in value and "verifier" not in value for _, value in rows)  # encrypted at rest

        older = client.get(f"/oauth/callback?{backs[0]}", headers=ALICE, follow_redirects=False)
        assert "replaced by a newer sign-in" in notice(client, older, ALICE)
        newest = client.get(f"/oauth/callback?{backs[-1]}", headers=ALICE, follow_redirects=False)
        assert newest.headers["location"] == "/?connected=signin"
        assert [user for (user,) in db.execute("SELECT user FROM oauth_pending")] == ["bob@example.com"]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_the_callback_finishes_on_another_app_process(tmp_path, oauth_server, database, request):
    """Connect through one app, come back through another built on the same database (as
    behind a load balancer without sticky sessions): the second finishes the sign-in."""
    configure(tmp_path, oauth_server)
    shared = {
        "auth_mode": "proxy",
        "proxy_secret": SECRET,
        "secret_key": "one-key-for-every-replica",
        "defaults_dir": tmp_path / "defaults",
        "config_dir": tmp_path / "overrides",
    }
    if database == "postgres":
        shared["database_url"] = request.getfixturevalue("postgres_url")
    else:
        shared["database_url"] = f"sqlite+aiosqlite:///{tmp_path / 'shared.db'}"
    first, second = (make_settings(tmp_path / name, **shared) for name in ("one", "two"))
    with running_app(first) as (one, _s1), running_app(second) as (two, services_two):
        back = connect(one, ALICE)
        done = two.get(f"/oauth/callback?{back}", headers=ALICE, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == "/?connected=signin", done.headers
        outcome = two.portal.call(
            functools.partial(services_two.pool.call, WHOAMI, {}, Sink(), user="alice@example.com")
        )
        assert outcome.ok and "token" in outcome.text
        again = one.get(f"/oauth/callback?{back}", headers=ALICE, follow_redirects=False)
        assert "already used" in notice(one, again, ALICE)  # taken once, whichever process took it
