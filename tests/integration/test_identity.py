"""One identity door: the authentication backend finds the user once per request or
socket, and groups are worked out again for every turn and catalogue push, so an
administrator's reload counts on sockets that were already open.  docs/security.md
lists these attacks."""

from __future__ import annotations

import pytest
import yaml

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "identity-proxy-secret"
GROUPS = {"ann@example.com": ["users", "staff"], "root@example.com": ["users", "admin"], "*@example.com": ["users"]}


def who(email: str, **extra: str) -> dict[str, str]:
    return {"x-user-email": email, "x-proxy-secret": SECRET, **extra}


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("identity")
    write_config(
        tmp / "overrides",
        servers={"staff": toolbox_entry(groups=["staff"], approval="never")},
        models=[double_model(llm)],
        default_model="double",
        groups=GROUPS,
    )
    settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET)
    with running_app(settings) as (client, _):
        yield client, tmp / "overrides" / "groups.yml"


def offered(llm) -> set[str]:
    return {t["function"]["name"] for t in llm.requests[-1].get("tools") or []}


def run_whoami(ws, llm) -> dict:
    llm.enqueue(ToolCallReply([ToolCall("staff_whoami", "{}")]), TextReply("done"))
    ws.send_json({"type": "chat", "content": "who am I?"})
    return next(e for e in until(ws, "message_done") if e["type"] == "tool_result")


def test_a_user_removed_from_a_group_loses_its_tools_on_an_open_socket_after_a_reload(site, llm):
    client, groups_file = site
    with client.websocket_connect("/ws", headers=who("ann@example.com")) as ws:
        assert "staff" in ws.receive_json()["groups"]
        assert run_whoami(ws, llm)["ok"]
        assert "staff_whoami" in offered(llm)

        try:
            groups_file.write_text(
                yaml.safe_dump({"users": {**GROUPS, "ann@example.com": ["users"]}, "admin_group": "admin"})
            )
            assert client.post("/api/admin/reload", headers=who("ann@example.com")).status_code == 403
            assert client.post("/api/admin/reload", headers=who("root@example.com")).status_code == 200
            # the open page hears that its user changed, then lists everything again
            refreshed = until(ws, "session")[-1]
            assert refreshed["refreshed"] is True and refreshed["groups"] == ["users"]
            assert until(ws, "catalogue_changed")[-1] == {"type": "catalogue_changed"}

            # the old socket's next turn is neither offered the tool nor may run it
            result = run_whoami(ws, llm)
            assert not result["ok"] and "not offered" in result["content"]
            assert "staff_whoami" not in offered(llm)
        finally:
            groups_file.write_text(yaml.safe_dump({"users": GROUPS, "admin_group": "admin"}))
            assert client.post("/api/admin/reload", headers=who("root@example.com")).status_code == 200


def test_an_address_is_normalized_once_for_groups_and_ownership(site, llm):
    client, _ = site
    shouting = who("  ANN@Example.COM ")
    config = client.get("/api/config", headers=shouting).json()
    assert config["user"] == {"email": "ann@example.com", "groups": ["staff", "users"], "admin": False}
    llm.enqueue(TextReply("hello"))
    with client.stream(
        "POST", "/api/chat", json={"content": "hi", "conversation_id": "ann-case-conv-1"}, headers=shouting
    ) as response:
        assert response.status_code == 200
        list(response.iter_lines())
    assert client.get("/api/conversations/ann-case-conv-1", headers=who("ann@example.com")).status_code == 200


def test_the_api_description_needs_sign_in_in_proxy_mode(site):
    client, _ = site
    for path in ("/docs", "/openapi.json"):
        assert client.get(path).status_code == 401
        assert (
            client.get(path, headers={"x-user-email": "ann@example.com", "x-proxy-secret": "wrong"}).status_code == 401
        )
        assert client.get(path, headers=who("ann@example.com")).status_code == 200
    assert "/api/chat" in client.get("/openapi.json", headers=who("ann@example.com")).json()["paths"]


def test_a_malformed_bearer_token_in_dev_mode_is_refused_not_taken_for_the_dev_user(tmp_path, llm):
    write_config(tmp_path / "overrides", models=[double_model(llm)], default_model="double")
    with running_app(make_settings(tmp_path)) as (client, _):
        assert client.get("/api/config").json()["user"]["email"] == "dev@localhost"
        for value in ("Bearer not-a-token", "Bearer sb_bad", "bearer  x"):
            refused = client.get("/api/config", headers={"Authorization": value})
            assert refused.status_code == 401 and "not valid" in refused.json()["error"]["message"], value
            assert client.get("/v1/models", headers={"Authorization": value}).status_code == 401
        assert client.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401
        with client.websocket_connect("/ws", headers={"Authorization": "Bearer nope"}) as ws:
            assert ws.receive()["code"] == 1008
        # other schemes are not bearer tokens: the dev user as before
        assert client.get("/api/config", headers={"Authorization": "Basic eDp5"}).status_code == 200
