"""Personal API tokens end to end, in proxy mode: made with the page's sign-in,
used without the proxy (on /api and /v1 only), groups from groups.yml (never
from the request), revoked; the answer routes find only the caller's turns."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support.doors import events_of, served
from tests.support.harness import double_model, make_settings, toolbox_entry, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
BOB = {"X-User-Email": "bob@example.com", "X-Proxy-Secret": SECRET}


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("tokens")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(), "research": toolbox_entry(groups=["research"], approval="never")},
        models=[double_model(llm)],
        default_model="double",
        groups={"alice@example.com": ["users", "research"], "*@example.com": ["users"]},
    )
    settings = make_settings(
        tmp, auth_mode="proxy", proxy_secret=SECRET, groups_header="X-User-Groups", turn_grace_s=5.0
    )
    with served(settings) as (base, services):
        with httpx.Client(base_url=base, timeout=30) as client:
            yield client, services


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def make_token(client, who, name="script"):
    response = client.post("/api/tokens", json={"name": name}, headers=who)
    assert response.status_code == 201, response.text
    return response.json()


def servers_seen(client, headers):
    config = client.get("/api/config", headers=headers)
    assert config.status_code == 200, config.text
    return {s["name"] for s in config.json()["servers"]}


def test_a_token_is_shown_once_used_without_the_proxy_and_revoked(site):
    client, _ = site
    made = make_token(client, ALICE, "laptop")
    assert made["token"].startswith("sb_") and made["name"] == "laptop"
    listed = client.get("/api/tokens", headers=ALICE).json()["tokens"]
    mine = next(t for t in listed if t["id"] == made["id"])
    assert "token" not in mine and mine["last_used_at"] is None
    assert made["token"] not in client.get("/api/tokens", headers=ALICE).text

    assert client.get("/api/conversations").status_code == 401  # neither proxy nor token
    assert client.get("/api/conversations", headers=bearer(made["token"])).status_code == 200
    assert "research" in servers_seen(client, bearer(made["token"]))  # alice's groups, from groups.yml
    used = next(t for t in client.get("/api/tokens", headers=ALICE).json()["tokens"] if t["id"] == made["id"])
    assert used["last_used_at"] is not None

    assert client.delete(f"/api/tokens/{made['id']}", headers=BOB).status_code == 404  # not bob's
    assert client.delete(f"/api/tokens/{made['id']}", headers=ALICE).status_code == 204
    refused = client.get("/api/conversations", headers=bearer(made["token"]))
    assert refused.status_code == 401 and "POST /api/tokens" in refused.json()["error"]["action"]
    assert made["id"] not in [t["id"] for t in client.get("/api/tokens", headers=ALICE).json()["tokens"]]


def test_a_wrong_token_is_refused_even_with_a_valid_proxy_identity(site):
    client, _ = site
    made = make_token(client, ALICE)
    wrong = made["token"][:-4] + "AAAA"
    for headers in (bearer(wrong), {**ALICE, **bearer(wrong)}, bearer("sb_0123456789abcdef_nope")):
        response = client.get("/api/conversations", headers=headers)
        assert response.status_code == 401
        error = response.json()["error"]
        assert "not valid" in error["message"] and "Authorization: Bearer" in error["action"]
    v1 = client.get("/v1/models", headers=bearer(wrong))
    assert v1.status_code == 401 and v1.json()["error"]["type"] == "authentication_error"


def test_groups_come_from_the_config_never_from_a_token_request(site):
    client, _ = site
    token = make_token(client, BOB)["token"]
    assert "research" not in servers_seen(client, {**bearer(token), "X-User-Groups": "research,admin"})
    assert client.post("/api/admin/reload", headers={**bearer(token), "X-User-Groups": "admin"}).status_code == 403


def test_a_token_cannot_manage_tokens_or_open_the_page(site):
    client, _ = site
    token = make_token(client, ALICE)["token"]
    assert client.post("/api/tokens", json={"name": "more"}, headers=bearer(token)).status_code == 403
    assert client.post("/api/tokens", json={"name": "more"}, headers={**ALICE, **bearer(token)}).status_code == 403
    assert client.get("/api/tokens", headers=bearer(token)).status_code == 403
    assert client.get("/", headers=bearer(token)).status_code == 401  # the page needs the proxy's sign-in


def test_a_token_does_not_open_the_websocket(site):
    """The socket is the page's: a token (a script's credential for /api and /v1) is refused at
    once, so no socket runs turns or tool calls on a token that may be revoked meanwhile."""
    client, _ = site
    token = make_token(client, ALICE)["token"]
    url = str(client.base_url).replace("http://", "ws://") + "/ws"
    for headers in (bearer(token), {**ALICE, **bearer(token)}):
        with connect(url, additional_headers=headers, open_timeout=10) as ws, pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
        assert "API token" in closed.value.rcvd.reason and "sign-in" in closed.value.rcvd.reason
    with connect(url, additional_headers=ALICE, open_timeout=10) as ws:  # the page's sign-in opens it
        assert json.loads(ws.recv(timeout=10))["user"] == "alice@example.com"


def test_a_turn_started_with_a_token_is_answered_and_seen_only_by_its_owner(site, llm):
    client, _ = site
    alice, bob = make_token(client, ALICE)["token"], make_token(client, BOB)["token"]
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("deleted"))
    body = {"content": "delete it", "conversation_id": "alice-token-conv-1"}
    with client.stream("POST", "/api/chat", json=body, headers=bearer(alice)) as response:
        assert response.status_code == 200
        events = events_of(response.iter_lines())
        asked = next(e for e in events if e["type"] == "approval_request")
        call_id = asked["call_id"]
        # bob (token or page) finds nothing of alice's to answer or stop
        for who in (bearer(bob), BOB):
            assert (
                client.post(f"/api/calls/{call_id}/approval", json={"approved": True}, headers=who).status_code == 404
            )
            assert client.post("/api/conversations/alice-token-conv-1/cancel", headers=who).status_code == 404
        # alice answers from the page (another door) what her token's stream asked
        assert client.post(f"/api/calls/{call_id}/approval", json={"approved": True}, headers=ALICE).status_code == 204
        rest = list(events)
    assert next(e for e in rest if e["type"] == "tool_result")["ok"] and rest[-1]["type"] == "message_done"
    assert client.get("/api/conversations/alice-token-conv-1", headers=bearer(alice)).status_code == 200
    assert client.get("/api/conversations/alice-token-conv-1", headers=bearer(bob)).status_code == 404
    assert client.post(f"/api/calls/{call_id}/approval", json={"approved": True}, headers=ALICE).status_code == 404
    assert client.post("/api/elicitations/nothing-asked", json={"action": "decline"}, headers=ALICE).status_code == 404
    assert client.post("/api/conversations/alice-token-conv-1/cancel", headers=ALICE).status_code == 404  # finished


def test_a_refused_chat_answers_json_with_its_status(site):
    client, _ = site
    token = make_token(client, ALICE)["token"]
    bad = client.post("/api/chat", json={"content": "x", "model": "no-such-model"}, headers=bearer(token))
    assert bad.status_code == 400 and bad.headers["content-type"].startswith("application/json")
    assert "no-such-model" in bad.json()["error"]["message"]
    malformed = client.post("/api/chat", json={"content": "x", "surprise": 1}, headers=bearer(token))
    assert malformed.status_code == 422
    llm_free = client.post("/api/chat", json={"content": "x", "conversation_id": "someone-elses-1"}, headers=BOB)
    assert llm_free.status_code == 200  # bob's conversation now
    list(llm_free.iter_lines())
    # An id a client picks is its user's own: alice's "someone-elses-1" is not bob's (nor blocked by it).
    own = client.post(
        "/api/chat", json={"content": "alice's own", "conversation_id": "someone-elses-1"}, headers=bearer(token)
    )
    assert own.status_code == 200
    list(own.iter_lines())
    bobs, alices = (client.get("/api/conversations/someone-elses-1", headers=who).json() for who in (BOB, ALICE))
    assert [m["content"] for m in bobs["messages"]][:1] == ["x"] and alices["messages"][0]["content"] == "alice's own"
    assert bobs["id"] != alices["id"]
    # the id the store gave bob's conversation is his: for alice it is another user's, so not found
    foreign = client.post("/api/chat", json={"content": "x", "conversation_id": bobs["id"]}, headers=bearer(token))
    assert foreign.status_code == 404 and foreign.json()["error"]["code"] == "not_found"
    assert client.get(f"/api/conversations/{bobs['id']}", headers=ALICE).status_code == 404


def test_without_a_store_tokens_say_why_they_cannot_be_used(tmp_path, llm):
    from tests.support.harness import running_app

    write_config(tmp_path / "defaults", models=[double_model(llm)], default_model="double")
    settings = make_settings(tmp_path, database_url="postgresql+asyncpg://nobody:secret@127.0.0.1:1/none")
    with running_app(settings) as (client, _):
        made = client.post("/api/tokens", json={"name": "x"})
        used = client.get("/api/conversations", headers=bearer("sb_0123456789abcdef_whatever"))
    for response in (made, used):
        assert response.status_code == 503 and "API tokens cannot be used now" in response.json()["error"]["message"]
        assert "secret" not in response.text
