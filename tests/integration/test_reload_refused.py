"""A refused reload (`POST /api/admin/reload` with a broken file) is logged and shows on
`/readyz` and the page with the file as it is now, never the error of an older version."""

from __future__ import annotations

import json

from tests.support.harness import make_settings, running_app, toolbox_entry, write_config

SECRET = "reload-secret"
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}


def _site(tmp):
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry()},
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    return running_app(make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET))


def _log_events(tmp, event):
    from switchboard.logs import flush_logs

    flush_logs()
    lines = (tmp / "logs" / "app.jsonl").read_text().splitlines()
    return [entry for entry in map(json.loads, lines) if entry.get("event") == event]


def test_a_refused_reload_is_logged_and_readyz_names_the_current_error(tmp_path):
    overrides = tmp_path / "overrides"
    overrides.mkdir()
    (overrides / "mcp.json").write_text('{"servers": {\n  "extra": {"command": "python",}\n}}\n')  # line 2 at start
    with _site(tmp_path) as (client, services):
        assert "line 2, column 33" in client.get("/readyz").json()["reason"]
        # The admin edits the file (a different mistake now) and presses Reload.
        (overrides / "mcp.json").write_text('{"servers": {"extra": 1,,}}')
        refused = client.post("/api/admin/reload", headers=ADMIN)
        assert refused.status_code == 400
        ready = client.get("/readyz")
        reason = ready.json()["reason"]
        assert "line 1, column 25" in reason and "line 2, column 33" not in reason, reason
        assert "reload was refused" in reason
        admin = client.get("/api/config", headers=ADMIN).json()
        assert any("line 1, column 25" in e for e in admin["config_errors"]), admin["config_errors"]
        assert not any("line 2, column 33" in e for e in admin["config_errors"])
        [logged] = _log_events(tmp_path, "config_reload_refused")
        assert logged["level"] == "warning" and logged["user"] == "root@example.com"
        assert "line 1, column 25" in logged["errors"][0]
        # Fixed and reloaded: the refusal is gone.
        (overrides / "mcp.json").write_text(json.dumps({"servers": {}}))
        assert client.post("/api/admin/reload", headers=ADMIN).status_code == 200
        assert services.life.refused_reload == []
        assert "reason" not in client.get("/readyz").json()


def test_a_refused_reload_of_a_working_site_is_reported_but_keeps_it_ready(tmp_path):
    with _site(tmp_path) as (client, _):
        assert client.get("/readyz").status_code == 200
        (tmp_path / "overrides").mkdir()
        (tmp_path / "overrides" / "groups.yml").write_text("users: [\n")
        assert client.post("/api/admin/reload", headers=ADMIN).status_code == 400
        ready = client.get("/readyz")
        assert ready.status_code == 200, "what runs still works: a typo must not take the site out of service"
        assert "reload was refused" in ready.json()["reason"] and "groups.yml" in ready.json()["reason"]
        assert "config_note" in client.get("/api/config", headers={**ADMIN, "x-user-email": "bob@example.com"}).json()
