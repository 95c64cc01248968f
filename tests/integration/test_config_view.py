"""`GET /api/config` as a typed response (web/config_view.py): the JSON the page reads keeps its
keys, per user (an administrator sees more), and `/openapi.json` describes it field by field."""

from __future__ import annotations

import pytest

from tests.support.harness import make_settings, running_app, toolbox_entry, write_config

SECRET = "config-view-secret"
TOP = {
    "user",
    "resources",
    "resource_templates",
    "prompts",
    "models",
    "default_model",
    "default_note",
    "compliance_levels",
    "servers",
    "tools",
}
SERVER = {
    "name",
    "description",
    "status",
    "reason",
    "transport",
    "protocol_version",
    "compliance_level",
    "file_types",
    "tools",
}
TOOL = {
    "name",
    "server",
    "tool",
    "title",
    "description",
    "input_schema",
    "annotations",
    "requires_approval",
    "trust",
}
MODEL = {"name", "description", "available", "reason", "demo", "failing", "gateway"}


def who(email: str) -> dict[str, str]:
    return {"x-user-email": email, "x-proxy-secret": SECRET}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("config-view")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(), "broken": {"command": "python", "args": [str(tmp / "missing.py")]}},
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET)
    with running_app(settings) as (client, _):
        yield client


def test_the_config_keeps_its_keys_for_a_user(app):
    config = app.get("/api/config", headers=who("bob@example.com")).json()
    assert set(config) == TOP  # no config_errors for a user; no config_note while the files read
    assert config["user"] == {"email": "bob@example.com", "groups": ["users"], "admin": False}
    assert {s["name"]: set(s) for s in config["servers"]} == {"toolbox": SERVER, "broken": SERVER}
    broken = next(s for s in config["servers"] if s["name"] == "broken")
    assert broken["status"] == "failed" and broken["reason"] == "unavailable right now; your administrator can see why"
    tools = {t["name"]: t for t in config["tools"]}
    assert set(tools["toolbox_echo"]) == TOOL and tools["toolbox_echo"]["trust"] == "approved"
    assert all(set(t) in (TOOL, TOOL | {"app"}) for t in config["tools"])
    assert [set(m) for m in config["models"]] == [MODEL]
    assert set(config["models"][0]["gateway"]) == {"exposure", "threshold_tokens", "tool_tokens", "tools", "active"}
    assert config["compliance_levels"][0] == {"name": "Public", "description": ""}
    assert all(set(p) == {"server", "name", "description", "arguments"} for p in config["prompts"])
    assert all(set(r) == {"server", "uri", "name", "description", "mime"} for r in config["resources"])


def test_an_administrator_also_gets_the_errors_and_the_servers_stderr(app):
    config = app.get("/api/config", headers=who("root@example.com")).json()
    assert set(config) == TOP | {"config_errors"} and config["config_errors"] == []
    assert config["user"]["admin"] is True
    broken = next(s for s in config["servers"] if s["name"] == "broken")
    assert set(broken) == SERVER | {"stderr_tail", "stderr_log"}
    assert broken["reason"] != "unavailable right now; your administrator can see why"


def test_the_api_description_documents_the_config_field_by_field(app):
    schema = app.get("/openapi.json", headers=who("bob@example.com")).json()
    response = schema["paths"]["/api/config"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    components = schema["components"]["schemas"]
    view = components[response["$ref"].rsplit("/", 1)[-1]]
    assert TOP | {"config_errors", "config_note"} <= set(view["properties"])
    server = components[view["properties"]["servers"]["items"]["$ref"].rsplit("/", 1)[-1]]
    assert SERVER | {"stderr_tail", "stderr_log", "auth"} <= set(server["properties"])
    tool = components[view["properties"]["tools"]["items"]["$ref"].rsplit("/", 1)[-1]]
    assert TOOL | {"app"} <= set(tool["properties"])
