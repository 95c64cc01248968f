"""Sharing a user's own server: its owner asks, the request waits in the console, an
administrator's approval makes it a deployment server for the groups given (its tools keep their
trust and pins, its sealed headers move with it), a decline leaves it the owner's with the reason.
A real toolbox over streamable HTTP on 127.0.0.1 (allowed through SWITCHBOARD_USER_SERVER_HOSTS)."""

from __future__ import annotations

import time

import pytest

from switchboard.errors import ToolNotAllowed
from switchboard.identity.access import Access
from switchboard.identity.users import User
from tests.support.harness import make_settings, run_toolbox_server, running_app, write_config

SECRET = "server-shares-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}
CAROL = {"x-user-email": "carol@other.org", "x-proxy-secret": SECRET}
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
TOKEN = "shared-header-value-2718"

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path):
    write_config(
        tmp_path / "defaults",
        groups={"*@example.com": ["users"], "*@other.org": ["guests"], "root@example.com": ["users", "admin"]},
    )
    settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET, user_server_hosts=["127.0.0.1"])
    with run_toolbox_server("http") as url, running_app(settings) as (client, services):
        yield client, services, url


def _user(email: str, group: str = "users") -> User:
    return User(email=email, groups=frozenset({group}))


def _echo(client, name: str, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        tools = client.get(f"/api/servers/{name}/tools", headers=ALICE).json()["tools"]
        found = [t for t in tools if t["tool"] == "echo"]
        if found or time.monotonic() > deadline:
            return found[0]
        time.sleep(0.1)


def _authorized(services, name: str, user: User, timeout_s: float = 60):
    """The tool once its server has come back under its new configuration (or the refusal)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return services.pool.registry.authorize(name, Access(user))
        except ToolNotAllowed:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _add(client, url: str, name: str) -> str:
    added = client.post("/api/servers", json={"name": name, "url": url, "headers": {"X-Token": TOKEN}}, headers=ALICE)
    assert added.status_code == 201, added.text
    return added.json()["server"]


def _stored(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in (tmp_path / "data").glob("switchboard.db*"))


def test_an_approved_request_makes_the_server_the_deployments_with_its_trust_and_headers(site, tmp_path):
    client, services, url = site
    server = _add(client, url, "mine")
    echo = _echo(client, "mine")
    approved = client.post("/api/servers/mine/tools/echo/approve", json={"pin": echo["pin"]}, headers=ALICE)
    assert approved.status_code == 200, approved.text

    assert client.post("/api/servers/mine/share", json={}, headers=BOB).status_code == 404  # not Bob's
    asked = client.post("/api/servers/mine/share", json={"note": "the team needs it"}, headers=ALICE)
    assert asked.status_code == 202 and asked.json() == {"server": server, "state": "pending"}, asked.text
    again = client.post("/api/servers/mine/share", json={}, headers=ALICE)
    assert again.status_code == 409, again.text
    mine = {s["name"]: s for s in client.get("/api/servers", headers=ALICE).json()["servers"]}
    assert mine["mine"]["share"]["state"] == "pending"

    assert client.get("/api/admin/shares", headers=BOB).status_code == 403
    requests = client.get("/api/admin/shares", headers=ADMIN).json()["requests"]
    assert [(r["server"], r["owner"], r["name"], r["note"], r["headers"]) for r in requests] == [
        (server, "alice@example.com", "mine", "the team needs it", ["X-Token"])
    ]
    assert TOKEN not in str(requests)
    refused = client.post(f"/api/admin/servers/{server}/share/approve", json={"groups": ["users"]}, headers=BOB)
    assert refused.status_code == 403
    assert client.post(
        f"/api/admin/servers/{server}/share/approve", json={"groups": []}, headers=ADMIN
    ).status_code in (
        400,
        422,
    )
    with pytest.raises(ToolNotAllowed):
        services.pool.registry.authorize(echo["name"], Access(_user("bob@example.com")))

    shared = client.post(
        f"/api/admin/servers/{server}/share/approve",
        json={"groups": ["users"], "compliance_level": "internal"},
        headers=ADMIN,
    )
    assert shared.status_code == 200 and shared.json()["source"] == "admin", shared.text
    config = services.pool.server_config(server)
    assert config.owner is None and config.groups == ["users"] and config.compliance_level == "internal"
    assert config.headers == {"X-Token": TOKEN}, "its headers moved with it"
    assert TOKEN.encode() not in _stored(tmp_path)
    # Bob (in the group) now uses its tool, approved as it was, with the pin Alice approved
    assert _authorized(services, echo["name"], _user("bob@example.com")).name == "echo"
    assert services.pool.trust.record(server, "echo").pin == echo["pin"]
    with pytest.raises(ToolNotAllowed):  # Carol is not in the group
        services.pool.registry.authorize(echo["name"], Access(_user("carol@other.org", "guests")))
    assert _authorized(services, echo["name"], _user("alice@example.com")).name == "echo"  # Alice too, as a user
    assert "mine" not in {s["name"] for s in client.get("/api/servers", headers=ALICE).json()["servers"]}
    listed = {s["name"]: s for s in client.get("/api/admin/servers", headers=ADMIN).json()["servers"]}
    assert listed[server]["source"] == "admin"
    assert client.get("/api/admin/shares", headers=ADMIN).json()["requests"] == []
    assert (
        client.post(f"/api/admin/servers/{server}/share/approve", json={"groups": ["users"]}, headers=ADMIN).status_code
        == 404
    )
    records = client.get("/api/admin/audit?limit=200", headers=ADMIN).json()["records"]
    actions = {(r.get("action"), r.get("user")) for r in records if r.get("server") == server}
    assert {("share_request", "alice@example.com"), ("share_approve", "root@example.com")} <= actions


def test_a_declined_request_leaves_the_server_its_owners_with_the_reason(site):
    client, services, url = site
    server = _add(client, url, "kept")
    assert client.post("/api/servers/kept/share", json={}, headers=ALICE).status_code == 202
    declined = client.post(f"/api/admin/servers/{server}/share/decline", json={"reason": "not for now"}, headers=ADMIN)
    assert declined.status_code == 200 and declined.json()["state"] == "declined", declined.text
    mine = {s["name"]: s for s in client.get("/api/servers", headers=ALICE).json()["servers"]}
    assert mine["kept"]["share"]["state"] == "declined" and mine["kept"]["share"]["reason"] == "not for now"
    config = services.pool.server_config(server)
    assert config.owner == "alice@example.com" and config.headers == {"X-Token": TOKEN}
    refused = client.post(f"/api/admin/servers/{server}/share/approve", json={"groups": ["users"]}, headers=ADMIN)
    assert refused.status_code == 404, "a declined request is not approved later"
    assert client.post("/api/servers/kept/share", json={}, headers=ALICE).status_code == 202  # may ask again
    assert client.delete("/api/servers/kept", headers=ALICE).status_code == 204
    assert client.get("/api/admin/shares", headers=ADMIN).json()["requests"] == []
