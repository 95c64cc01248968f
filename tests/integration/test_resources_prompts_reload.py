"""Resources and prompts offered to the user (with the same group checks as
tools), and reloading the configuration without a restart."""

from __future__ import annotations

import json

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, write_config
from tests.support.llm_double import TextReply

SECRET = "reload-secret"


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("res")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(approval="never"), "private": toolbox_entry(groups=["research"])},
        models=[double_model(llm)],
        default_model="double",
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    with running_app(make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET)) as (client, services):
        yield client, services, tmp


def who(email):
    return {"x-user-email": email, "x-proxy-secret": SECRET}


def test_resources_templates_and_prompts_are_listed_for_permitted_servers_only(site):
    client, _, _ = site
    config = client.get("/api/config", headers=who("bob@example.com")).json()
    assert {(r["server"], r["uri"]) for r in config["resources"]} == {("toolbox", "toolbox://readme")}
    assert {t["uri_template"] for t in config["resource_templates"]} == {"toolbox://notes/{name}"}
    review = next(p for p in config["prompts"] if p["name"] == "review")
    assert review["server"] == "toolbox" and {a["name"] for a in review["arguments"]} == {"code", "language"}


def test_a_prompt_fills_in_its_arguments(site):
    client, _, _ = site
    body = {"server": "toolbox", "name": "review", "arguments": {"code": "x = 1"}}
    answer = client.post("/api/prompts", headers=who("bob@example.com"), json=body).json()
    assert answer["text"] == "Please review this python code:\nx = 1"
    forbidden = client.post("/api/prompts", headers=who("bob@example.com"), json={**body, "server": "private"})
    assert forbidden.status_code == 404


def test_an_attached_resource_reaches_the_model_as_context(site, llm):
    client, _, _ = site
    llm.enqueue(TextReply("marmalade it is"))
    with client.websocket_connect("/ws", headers=who("bob@example.com")) as ws:
        ws.receive_json()
        ws.send_json(
            {
                "type": "chat",
                "content": "what is the secret word?",
                "resources": [{"server": "toolbox", "uri": "toolbox://readme"}],
            }
        )
        while ws.receive_json()["type"] != "message_done":
            pass
        user = [m for m in llm.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
        assert '<resource server="toolbox" uri="toolbox://readme">' in user and "marmalade" in user
        ws.send_json(
            {"type": "chat", "content": "and this?", "resources": [{"server": "private", "uri": "toolbox://readme"}]}
        )
        event = ws.receive_json()
    assert event["type"] == "error" and event["code"] == "forbidden"


def test_reload_adds_removes_restarts_and_keeps_untouched_servers(site):
    client, services, tmp = site
    assert client.post("/api/admin/reload", headers=who("bob@example.com")).status_code == 403
    untouched = services.pool.connections["toolbox"]
    generation = untouched.generation
    overrides = tmp / "overrides"
    overrides.mkdir(exist_ok=True)
    (overrides / "mcp.json").write_text(
        json.dumps(
            {
                "servers": {
                    "private": {"enabled": False},
                    "extra": toolbox_entry(approval="never"),
                    "broken": {"command": "x", "url": "http://127.0.0.1:1/mcp"},
                }
            }
        )
    )
    report = client.post("/api/admin/reload", headers=who("root@example.com")).json()
    assert report["servers"]["toolbox"] == "unchanged"
    assert report["servers"]["extra"] == "added"
    assert report["servers"]["private"] == "restarted"  # now disabled
    assert "cannot both be set" in report["servers"]["broken"]
    client.portal.call(services.pool.wait_settled, 60)
    assert services.pool.connections["toolbox"] is untouched and untouched.generation == generation
    statuses = client.get("/readyz", headers=who("root@example.com")).json()["servers"]
    assert statuses["extra"]["status"] == "ready" and "private" not in statuses
    tools = {t["name"] for t in client.get("/api/config", headers=who("root@example.com")).json()["tools"]}
    assert "extra_echo" in tools and not any(t.startswith("private_") for t in tools)
