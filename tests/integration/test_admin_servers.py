"""The admin console's servers API (`/api/admin/servers`): administrators only; an added server
runs without a restart and survives one; every bad input is refused naming the field, and changes
nothing (neither the list nor the store)."""

from __future__ import annotations

import time

import pytest

from tests.support.harness import TOOLBOX, make_settings, running_app, toolbox_entry, write_config

SECRET = "console-secret"
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}
NEW = {"name": "extra", "command": "python", "args": [str(TOOLBOX)], "description": "added in the console"}


def _site(tmp):
    if not (tmp / "defaults").exists():
        write_config(
            tmp / "defaults",
            servers={"toolbox": toolbox_entry()},
            groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
        )
    return running_app(make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET), environ={"SET_VAR": "x"})


def _servers(client) -> dict[str, dict]:
    answer = client.get("/api/admin/servers", headers=ADMIN)
    assert answer.status_code == 200, answer.text
    return {s["name"]: s for s in answer.json()["servers"]}


def _until(client, name: str, status: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        server = _servers(client).get(name)
        if server is not None and server["status"] == status:
            return server
        assert time.monotonic() < deadline, server
        time.sleep(0.1)


def _stable(server: dict) -> dict:
    return {k: v for k, v in server.items() if k != "stderr_tail"}


def test_only_administrators_reach_the_console_routes(tmp_path):
    with _site(tmp_path) as (client, _):
        for method, path, body in [
            ("GET", "/api/admin/servers", None),
            ("POST", "/api/admin/servers", NEW),
            ("POST", "/api/admin/servers/extra/check", NEW),
            ("PATCH", "/api/admin/servers/toolbox", {"enabled": False}),
            ("DELETE", "/api/admin/servers/toolbox", None),
            ("POST", "/api/admin/servers/toolbox/restart", None),
            ("GET", "/api/admin/users", None),
            ("POST", "/api/admin/users/root@example.com/revoke", {"tokens": True}),
        ]:
            answer = client.request(method, path, json=body, headers=BOB)
            assert answer.status_code == 403, (method, path, answer.text)
        assert _servers(client)["toolbox"]["enabled"] is True


def test_an_added_server_runs_at_once_is_listed_fully_and_survives_a_restart(tmp_path):
    with _site(tmp_path) as (client, _):
        added = client.post("/api/admin/servers?check=true", json=NEW, headers=ADMIN)
        assert added.status_code == 201, added.text
        server = _until(client, "extra", "ready")
        assert server["source"] == "admin" and server["trust"] == "review" and server["transport"] == "stdio"
        # added in the console: its tools wait for an administrator's review
        assert server["tools"]["pending"] >= 5 and server["tools"]["approved"] == 0
        assert set(server["tools"]) == {"approved", "pending", "changed", "blocked"}
        assert server["groups"] == ["*"] and server["protocol_version"] and server["last_error"] is None
        assert server["entry"]["args"] == [str(TOOLBOX)] and server["version"] == 1
        assert _servers(client)["toolbox"]["source"] == "config"
        seen = client.get("/api/config", headers=BOB).json()
        assert any(s["name"] == "extra" and s["tools"] for s in seen["servers"]), "a user sees the new server's tools"
    with _site(tmp_path) as (client, _):
        assert _until(client, "extra", "ready")["source"] == "admin"


def test_a_config_file_server_is_switched_off_and_on_but_keeps_its_definition(tmp_path):
    with _site(tmp_path) as (client, _):
        off = client.patch("/api/admin/servers/toolbox", json={"enabled": False}, headers=ADMIN)
        assert off.status_code == 200, off.text
        assert _until(client, "toolbox", "disabled")["enabled"] is False
        refused = client.patch("/api/admin/servers/toolbox", json={"description": "mine"}, headers=ADMIN)
        assert refused.status_code == 400 and "field 'description'" in refused.json()["error"]["message"]
        gone = client.delete("/api/admin/servers/toolbox", headers=ADMIN)
        assert gone.status_code == 400 and "mcp.json" in gone.json()["error"]["action"]
    with _site(tmp_path) as (client, _):
        assert _servers(client)["toolbox"]["status"] == "disabled", "the switch survives a restart"
        assert client.patch("/api/admin/servers/toolbox", json={"enabled": True}, headers=ADMIN).status_code == 200
        _until(client, "toolbox", "ready")


BAD_ADDS = [
    ({**NEW, "bogus": 1}, 400, ["field 'bogus'", "unknown field"]),
    ({**NEW, "url": "https://example.com/mcp"}, 400, ["'command' and 'url' cannot both be set"]),
    ({**NEW, "name": "toolbox"}, 409, ["field 'name'", "exists"]),
    ({**NEW, "name": "bad name!"}, 400, ["field 'name'", "server names may use"]),
    ({**NEW, "env": {"TOKEN": "${NOT_SET_ANYWHERE}"}}, 400, ["field 'env.TOKEN'", "${NOT_SET_ANYWHERE} is not set"]),
    ({"name": "meta", "url": "http://169.254.169.254/mcp"}, 400, ["field 'url'", "endpoint policy", "link-local"]),
    ({"name": "local", "url": "file:///etc/passwd"}, 400, ["field 'url'", "not an http(s) address"]),
    ({**NEW, "trust": "sometimes"}, 400, ["field 'trust'"]),
    ({**NEW, "command": "/no/such/program"}, 400, ["the check failed"]),
]


@pytest.mark.parametrize("body,status,words", BAD_ADDS, ids=[str(i) for i in range(len(BAD_ADDS))])
def test_a_bad_server_is_refused_naming_the_field_and_changes_nothing(tmp_path, body, status, words):
    with _site(tmp_path) as (client, services):
        before = {name: _stable(s) for name, s in _servers(client).items()}
        answer = client.post("/api/admin/servers?check=true", json=body, headers=ADMIN)
        assert answer.status_code == status, answer.text
        message = answer.json()["error"]["message"]
        assert all(word in message for word in words), message
        assert {name: _stable(s) for name, s in _servers(client).items()} == before
        assert set(services.pool.connections) == {"toolbox"}


def test_edits_race_with_removal_and_with_each_other_and_lose_cleanly(tmp_path):
    with _site(tmp_path) as (client, services):
        assert client.post("/api/admin/servers", json={**NEW, "enabled": False}, headers=ADMIN).status_code == 201
        shown = _servers(client)["extra"]
        assert shown["version"] == 1 and shown["status"] == "disabled"
        # Another administrator edits first: an edit made against the version shown is refused.
        first = client.patch("/api/admin/servers/extra", json={"description": "one", "version": 1}, headers=ADMIN)
        assert first.status_code == 200, first.text
        stale = client.patch("/api/admin/servers/extra", json={"description": "two", "version": 1}, headers=ADMIN)
        assert stale.status_code == 409, stale.text
        assert _servers(client)["extra"]["description"] == "one"
        # Removed by one, edited by the other: a clear 404, and nothing comes back.
        assert client.delete("/api/admin/servers/extra", headers=ADMIN).status_code == 204
        late = client.patch("/api/admin/servers/extra", json={"description": "three", "version": 2}, headers=ADMIN)
        assert late.status_code == 404, late.text
        assert "extra" not in _servers(client) and "extra" not in services.pool.connections
        assert client.delete("/api/admin/servers/extra", headers=ADMIN).status_code == 404


def test_an_edit_keeps_hidden_values_and_a_bad_edit_changes_nothing(tmp_path):
    with _site(tmp_path) as (client, services):
        body = {**NEW, "env": {"SECRET": "s3cret", "REF": "${SET_VAR}"}}
        assert client.post("/api/admin/servers", json=body, headers=ADMIN).status_code == 201
        shown = _until(client, "extra", "ready")
        assert shown["entry"]["env"] == {"SECRET": "(hidden)", "REF": "${SET_VAR}"}, "a secret is never shown back"
        bad = client.patch("/api/admin/servers/extra", json={"url": "https://example.com/mcp"}, headers=ADMIN)
        assert bad.status_code == 400 and "'command' and 'url'" in bad.json()["error"]["message"]
        assert _servers(client)["extra"]["version"] == 1
        edited = client.patch(
            "/api/admin/servers/extra", json={"env": shown["entry"]["env"], "description": "new"}, headers=ADMIN
        )
        assert edited.status_code == 200, edited.text
        assert services.pool.server_config("extra").env == {"SECRET": "s3cret", "REF": "x"}
        assert services.pool.server_config("extra").description == "new"


def test_the_check_connects_and_lists_tools_without_saving(tmp_path):
    with _site(tmp_path) as (client, services):
        entry = {k: v for k, v in NEW.items() if k != "name"}
        checked = client.post("/api/admin/servers/extra/check", json=entry, headers=ADMIN)
        assert checked.status_code == 200, checked.text
        assert checked.json()["ok"] is True and "echo" in checked.json()["tools"]
        failed = client.post(
            "/api/admin/servers/extra/check", json={**entry, "command": "/no/such/program"}, headers=ADMIN
        )
        assert failed.json()["ok"] is False and failed.json()["reason"]
        assert "extra" not in _servers(client) and "extra" not in services.pool.connections


def test_every_console_decision_is_an_audit_record_naming_fields_never_values(tmp_path):
    entry = {**NEW, "env": {"TOKEN": "s3cret-value"}}
    with _site(tmp_path) as (client, _):
        assert client.post("/api/admin/servers", json=entry, headers=ADMIN).status_code == 201
        _until(client, "extra", "ready")
        tool = next(t for t in client.get("/api/admin/tools?state=pending", headers=ADMIN).json()["tools"])
        approved = client.post(f"/api/admin/tools/{tool['name']}/approve", json={"pin": tool["pin"]}, headers=ADMIN)
        assert approved.status_code == 200, approved.text
        assert client.patch("/api/admin/servers/extra", json={"enabled": False}, headers=ADMIN).status_code == 200
        assert client.delete("/api/admin/servers/extra", headers=ADMIN).status_code == 204
        client.get("/api/config", headers=BOB)  # bob is seen, so his access can be revoked
        assert (
            client.post("/api/admin/users/bob@example.com/revoke", json={"tokens": True}, headers=ADMIN).status_code
            == 200
        )
        records = client.get("/api/admin/audit?kind=admin_action&limit=100", headers=ADMIN).json()["records"]
    actions = {r["action"]: r for r in records}
    assert {"server_add", "tool_approve", "server_edit", "server_remove", "revoke"} <= set(actions)
    assert all(r["user"] == "root@example.com" for r in records)
    assert actions["tool_approve"]["pin"] == tool["pin"] and actions["tool_approve"]["tool"] == tool["name"]
    assert actions["tool_approve"]["before_state"] == "pending"
    assert "env" in actions["server_add"]["fields"] and "s3cret-value" not in str(records)
    assert actions["revoke"]["target"] == "bob@example.com"
