"""/readyz: a failed optional server does not hold readiness; a required one and a broken
config file do. Details (server names, reasons, config errors) only for administrators.
Administrators can restart one server."""

from __future__ import annotations

import json
import time

from tests.support.harness import TOOLBOX, make_settings, running_app, toolbox_entry, write_config

SECRET = "ready-secret"
BROKEN = {"command": "python", "args": ["-c", "import sys; sys.exit('cannot start: no licence')"]}


def who(email: str) -> dict[str, str]:
    return {"x-user-email": email, "x-proxy-secret": SECRET}


ADMIN, USER = who("root@example.com"), who("bob@example.com")


def _site(tmp, servers, environ=None):
    write_config(
        tmp / "defaults", servers=servers, groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]}
    )
    return running_app(make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET), environ)


def _wait(client, check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        body = client.get("/readyz", headers=ADMIN).json()
        if check(body) or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def test_a_failed_optional_server_does_not_hold_readiness_and_strangers_see_only_counts(tmp_path):
    with _site(tmp_path, {"toolbox": toolbox_entry(), "broken": BROKEN}) as (client, _):
        anonymous = client.get("/readyz")
        assert anonymous.status_code == 200, anonymous.text
        assert anonymous.json() == {"status": "ready", "counts": {"total": 2, "ready": 1, "starting": 0, "failed": 1}}
        assert "broken" not in client.get("/readyz", headers=USER).text
        admin = client.get("/readyz", headers=ADMIN).json()
        assert admin["servers"]["broken"]["status"] == "failed" and admin["servers"]["toolbox"]["status"] == "ready"
        assert "no licence" in admin["servers"]["broken"]["reason"] or "exited" in admin["servers"]["broken"]["reason"]


def test_a_required_server_that_failed_keeps_readyz_at_503(tmp_path):
    with _site(tmp_path, {"toolbox": toolbox_entry(), "licensed": {**BROKEN, "required": True}}) as (client, _):
        anonymous = client.get("/readyz")
        assert anonymous.status_code == 503
        body = anonymous.json()
        assert body["status"] == "not_ready" and "1 required server(s) not ready" in body["reason"]
        assert "licensed" not in anonymous.text
        admin = client.get("/readyz", headers=ADMIN).json()
        assert "licensed" in admin["reason"] and admin["servers"]["licensed"]["required"] is True


def test_a_broken_override_file_is_loud_on_readyz_and_the_page(tmp_path):
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "mcp.json").write_text('{"servers": {\n  "extra": {"command": "python",}\n}}\n')
    with _site(tmp_path, {"toolbox": toolbox_entry()}) as (client, services):
        ready = client.get("/readyz")
        assert ready.status_code == 503
        reason = ready.json()["reason"]
        assert "mcp.json" in reason and "line 2, column 33" in reason and str(tmp_path) not in reason
        assert services.pool.connections["toolbox"].status.status == "ready", "the bundled servers still run"
        admin = client.get("/api/config", headers=ADMIN).json()
        assert any("overrides/mcp.json" in e and "line 2, column 33" in e for e in admin["config_errors"])
        user = client.get("/api/config", headers=USER).json()
        assert "config_errors" not in user and "administrator" in user["config_note"]
        # Reloading a file that is still broken is refused, and what runs keeps running.
        (tmp_path / "overrides" / "mcp.json").write_text('{"servers": {"toolbox": {"enabled": false},}}')
        refused = client.post("/api/admin/reload", headers=ADMIN)
        assert refused.status_code == 400 and "line 1, column" in refused.json()["error"]["message"]
        assert services.pool.connections["toolbox"].status.status == "ready"
        # Fixed and reloaded: ready again.
        (tmp_path / "overrides" / "mcp.json").write_text(json.dumps({"servers": {"extra": toolbox_entry()}}))
        assert client.post("/api/admin/reload", headers=ADMIN).status_code == 200
        body = _wait(client, lambda b: b["status"] == "ready")
        assert body["status"] == "ready" and body["servers"]["extra"]["status"] == "ready"
        assert "config_note" not in client.get("/api/config", headers=USER).json()


def test_an_entry_refused_by_validation_but_marked_required_holds_readiness(tmp_path):
    with _site(
        tmp_path,
        {"toolbox": toolbox_entry(), "vital": {"url": "http://127.0.0.1:9/mcp", "command": "x", "required": True}},
    ) as (client, _):
        assert client.get("/readyz").status_code == 503


def test_an_admin_restarts_one_server_after_fixing_its_cause(tmp_path):
    licence = tmp_path / "licence"
    wrapper = tmp_path / "licensed.py"
    wrapper.write_text(
        "import os, runpy, sys\n"
        f"if not os.path.exists({str(licence)!r}):\n    sys.exit('cannot start: no licence')\n"
        f"runpy.run_path({str(TOOLBOX)!r}, run_name='__main__')\n"
    )
    with _site(tmp_path, {"licensed": {"command": "python", "args": [str(wrapper)]}, "toolbox": toolbox_entry()}) as (
        client,
        services,
    ):
        assert services.pool.connections["licensed"].status.status == "failed"
        assert client.post("/api/servers/licensed/restart", headers=USER).status_code == 403
        assert client.post("/api/servers/nosuch/restart", headers=ADMIN).status_code == 404
        licence.write_text("ok")
        old = services.pool.connections["licensed"]
        answer = client.post("/api/servers/licensed/restart", headers=ADMIN)
        assert services.pool.connections["licensed"] is not old, "a fresh connection (and process)"
        assert answer.status_code == 200 and answer.json() == {"server": "licensed", "status": "starting"}
        body = _wait(client, lambda b: b["servers"]["licensed"]["status"] == "ready", timeout=20)
        assert body["servers"]["licensed"]["status"] == "ready"
        tools = {t["name"] for t in client.get("/api/config", headers=ADMIN).json()["tools"]}
        assert "licensed_echo" in tools
