"""The admin console across app processes (PostgreSQL, the relay between them): a server added,
switched off or removed on one process is live on the other within 2 s, without a restart; a
user's tokens revoked on one stop working on the other at once, and their open pages there close."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support.cluster import running_cluster
from tests.support.harness import TOOLBOX, toolbox_entry, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
LIVE_WITHIN_S = 2.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster):
    folder = tmp_path_factory.mktemp("console")
    write_config(
        folder / "defaults", servers={"toolbox": toolbox_entry()}, groups={"dev@localhost": ["users", "admin"]}
    )
    with running_cluster(folder, postgres_cluster.create_database(), replicas=2) as running:
        yield running


def _http(cluster, index: int) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{cluster.ports[index]}", timeout=30)


def _servers(client: httpx.Client) -> dict[str, dict]:
    answer = client.get("/api/admin/servers")
    assert answer.status_code == 200, answer.text
    return {s["name"]: s for s in answer.json()["servers"]}


def _within(check, seconds: float) -> float:
    """How long until `check()` holds; fails when it does not within `seconds`."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_server_changed_on_one_process_is_live_on_the_other_within_2_s(cluster):
    with _http(cluster, 0) as first, _http(cluster, 1) as second:
        added = first.post("/api/admin/servers", json={"name": "added", "command": "python", "args": [str(TOOLBOX)]})
        assert added.status_code == 201, added.text
        _within(lambda: "added" in _servers(second), LIVE_WITHIN_S)
        _within(lambda: _servers(second)["added"]["status"] == "ready", 60)  # its process starts there too
        assert _servers(second)["added"]["source"] == "admin"
        off = second.patch("/api/admin/servers/added", json={"enabled": False})
        assert off.status_code == 200, off.text
        _within(lambda: _servers(first)["added"]["status"] == "disabled", LIVE_WITHIN_S)
        assert first.delete("/api/admin/servers/added").status_code == 204
        _within(lambda: "added" not in _servers(second), LIVE_WITHIN_S)


def _held(client: httpx.Client, email: str) -> dict:
    users = {u["email"]: u for u in client.get("/api/admin/users").json()["users"]}
    return users.get(email, {"open_sessions": 0})


def test_the_users_tab_counts_the_pages_open_on_every_process(cluster):
    """A page open on one process is counted by the other (within the share interval, 5 s), and
    no longer once it closes."""
    with _http(cluster, 0) as first, _http(cluster, 1) as second:
        assert second.get("/api/config").status_code == 200  # seen
        with connect(f"ws://127.0.0.1:{cluster.ports[1]}/ws", open_timeout=30) as page:
            assert json.loads(page.recv(timeout=30))["type"] == "session"
            assert _held(second, "dev@localhost")["open_sessions"] == 1  # counted where it is open, at once
            _within(lambda: _held(first, "dev@localhost")["open_sessions"] == 1, 20)
            with connect(f"ws://127.0.0.1:{cluster.ports[0]}/ws", open_timeout=30) as other:
                assert json.loads(other.recv(timeout=30))["type"] == "session"
                assert _held(first, "dev@localhost")["open_sessions"] == 2  # its own, plus the other's share
        _within(lambda: _held(first, "dev@localhost")["open_sessions"] == 0, 20)


def test_revoking_tokens_and_sessions_on_one_process_takes_effect_on_the_other(cluster):
    with _http(cluster, 0) as first, _http(cluster, 1) as second:
        made = second.post("/api/tokens", json={"name": "script"})
        assert made.status_code == 201, made.text
        token = {"authorization": f"Bearer {made.json()['token']}"}
        assert second.get("/api/config", headers=token).status_code == 200
        users = {u["email"]: u for u in first.get("/api/admin/users").json()["users"]}
        assert [t["name"] for t in users["dev@localhost"]["api_tokens"]] == ["script"]
        assert users["dev@localhost"]["groups"] == [
            {"name": "admin", "source": "groups.yml"},
            {"name": "users", "source": "groups.yml"},
        ]
        with connect(f"ws://127.0.0.1:{cluster.ports[1]}/ws", open_timeout=30) as page:
            assert json.loads(page.recv(timeout=30))["type"] == "session"
            revoked = first.post("/api/admin/users/dev@localhost/revoke", json={"tokens": True, "sessions": True})
            assert revoked.status_code == 200 and revoked.json()["tokens_revoked"] == 1, revoked.text
            assert second.get("/api/config", headers=token).status_code == 401, "the token is refused at once"
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    page.recv(timeout=LIVE_WITHIN_S)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
            assert closed.value.rcvd.reason == "an administrator closed your session"
