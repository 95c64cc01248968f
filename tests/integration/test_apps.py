"""MCP Apps over real doors with real stdio servers (tests/support/servers/apps.py) and the
HTTP LLM double: the `app` event, mounting an app (owner only), and the app's requests
through the host, which run through the very call path of the model's calls."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tests.support.harness import (
    PROJECT_ROOT,
    double_model,
    make_settings,
    running_app,
    toolbox_entry,
    until,
    write_config,
)
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"
APPS = PROJECT_ROOT / "tests" / "support" / "servers" / "apps.py"


def headers(email: str) -> dict[str, str]:
    return {"X-User-Email": email, "X-Proxy-Secret": SECRET}


ALICE, BOB = headers("alice@example.com"), headers("bob@example.com")


def build(tmp, llm, alice_groups=("users",), html_note="first", **settings):
    apps = {"command": "python", "args": [str(APPS)]}
    write_config(
        tmp / "defaults",
        servers={
            "counter": {
                **apps,
                "compliance_level": "Internal",
                "app_permissions": ["clipboard-write"],
                "env": {"APP_HTML_NOTE": html_note},
            },
            "other": apps,
            "team": {**apps, "groups": ["team"]},
            "toolbox": toolbox_entry(groups=["research"], approval="never"),
        },
        models=[double_model(llm)],
        default_model="double",
        groups={"alice@example.com": list(alice_groups), "bob@example.com": ["users"]},
    )
    return make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET, **settings)


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    with running_app(build(tmp_path_factory.mktemp("apps"), llm)) as (client, services):
        yield client, services


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def mount(client, llm, start: int = 1, tool: str = "counter_show_counter") -> tuple[str, str, Any]:
    """A turn of alice's that calls the app tool; (conversation id, app call id, open websocket cm)."""
    llm.enqueue(ToolCallReply([ToolCall(tool, json.dumps({"start": start}))]), TextReply("Shown."))
    ws_cm = client.websocket_connect("/ws", headers=ALICE)
    ws = ws_cm.__enter__()
    ws.receive_json()
    ws.send_json({"type": "chat", "content": "show the counter"})
    events = until(ws, "message_done")
    app = next(e for e in events if e["type"] == "app")
    return events[-1]["conversation_id"], app["call_id"], (ws_cm, ws, events)


def rpc(client, call_id: str, method: str, params: Any = None, who=ALICE):
    body = {"method": method} if params is None else {"method": method, "params": params}
    return client.post(f"/api/apps/{call_id}/rpc", json=body, headers=who)


def test_the_app_event_follows_the_tool_result_on_the_websocket_and_api_chat_not_v1(site, llm):
    client, _ = site
    _, call_id, (ws_cm, _, events) = mount(client, llm)
    ws_cm.__exit__(None, None, None)
    types = [e["type"] for e in events]
    app = events[types.index("app")]
    assert types[types.index("app") - 1] == "tool_result" and events[types.index("app") - 1]["call_id"] == call_id
    assert app == {
        "type": "app",
        "call_id": call_id,
        "server": "counter",
        "tool": "counter_show_counter",
        "resource_uri": "ui://counter/app.html",
    }

    llm.enqueue(ToolCallReply([ToolCall("counter_legacy_counter")]), TextReply("Shown."))
    sse = client.post("/api/chat", json={"content": "legacy"}, headers=ALICE).text
    kinds = [line[len("event: ") :] for line in sse.splitlines() if line.startswith("event: ")]
    assert kinds[kinds.index("app") - 1] == "tool_result" and "ui://counter/app.html" in sse

    llm.enqueue(ToolCallReply([ToolCall("counter_show_counter")]), TextReply("Shown."))
    v1 = client.post(
        "/v1/chat/completions",
        headers=ALICE,
        json={"model": "double", "stream": True, "messages": [{"role": "user", "content": "show"}]},
    )
    chunks = [json.loads(line[6:]) for line in v1.text.splitlines() if line.startswith("data: {")]
    assert v1.status_code == 200 and "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Shown."
    assert "counter at 0" in json.dumps(llm.requests[-1]["messages"])  # the tool ran; the model got its text
    assert "resource_uri" not in v1.text and "ui://" not in v1.text


def test_the_config_marks_app_tools_and_who_may_call_them(site):
    client, _ = site
    tools = {t["name"]: t for t in client.get("/api/config", headers=ALICE).json()["tools"]}
    assert tools["counter_show_counter"]["app"] == {
        "resource_uri": "ui://counter/app.html",
        "visibility": ["model", "app"],
    }
    assert tools["counter_legacy_counter"]["app"]["resource_uri"] == "ui://counter/app.html"
    assert tools["counter_bump"]["app"] == {"resource_uri": None, "visibility": ["app"]}
    assert "app" not in tools["counter_ui_extension"]


def test_a_stored_app_is_marked_and_mounts_for_its_owner_only(site, llm):
    client, _ = site
    conversation_id, call_id, (ws_cm, *_) = mount(client, llm, start=7)
    ws_cm.__exit__(None, None, None)

    stored = client.get(f"/api/conversations/{conversation_id}", headers=ALICE).json()
    tool_message = next(m for m in stored["messages"] if m["role"] == "tool")
    assert tool_message["app"] == {"resource_uri": "ui://counter/app.html"} and "mcp_result" not in tool_message

    app = client.get(f"/api/apps/{call_id}", headers=ALICE).json()
    assert (app["call_id"], app["conversation_id"], app["server"]) == (call_id, conversation_id, "counter")
    assert app["tool"]["name"] == "show_counter" and app["qualified_tool"] == "counter_show_counter"
    assert "ui/initialize" in app["html"] and app["prefers_border"] is True
    assert app["csp"] == {
        "connectDomains": ["https://api.example.com"],
        "resourceDomains": ["https://*.cdn.example.com"],
        "frameDomains": [],
        "baseUriDomains": [],
    }
    assert app["permissions"] == {"clipboardWrite": {}}  # camera is declared, but the operator did not allow it
    assert app["allow"] == ["clipboard-write"]  # the frames' features: the page and the proxy keep no map
    assert app["tool_input"] == {"start": 7}
    assert app["tool_result"]["structuredContent"] == {"count": 7} and app["tool_result"]["isError"] is False

    assert client.get(f"/api/apps/{call_id}", headers=BOB).status_code == 404
    assert rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 1}}, who=BOB).status_code == 404
    assert client.get("/api/apps/call_nosuchcall", headers=ALICE).status_code == 404


def test_an_apps_call_is_a_real_call_that_every_open_page_sees(site, llm):
    client, services = site
    conversation_id, call_id, (ws_cm, ws, _) = mount(client, llm)
    try:
        with client.websocket_connect("/ws", headers=ALICE) as second:
            second.receive_json()
            second.send_json({"type": "attach", "conversation_id": conversation_id})
            assert second.receive_json()["type"] == "attached"
            answer = rpc(
                client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 4, "username": "mallory"}}
            )
            assert answer.status_code == 200, answer.text
            result = answer.json()["result"]
            assert result["structuredContent"] == {"count": 5, "user": "alice@example.com"}  # host-filled argument
            for page in (ws, second):
                start, done = until(page, "tool_start"), until(page, "tool_result")
                assert start[-1]["tool"] == "counter_bump" and start[-1]["from_app"] == call_id
                assert done[-1]["ok"] and done[-1]["from_app"] == call_id
    finally:
        ws_cm.__exit__(None, None, None)

    found = client.portal.call(services.store.find_tool_call, "alice@example.com", call_id)
    kept = found[1].data["app"]["calls"]
    assert kept[-1]["tool"] == "counter_bump" and kept[-1]["ok"] and kept[-1]["arguments"]["count"] == 4
    log = (services.settings.log_dir / "app.jsonl").read_text()
    calls = [json.loads(line) for line in log.splitlines() if '"tool_call"' in line]
    assert any(c.get("tool") == "counter_bump" and c.get("from_app") == call_id for c in calls)


def test_an_app_reaches_only_its_own_servers_tools_that_apps_may_call(site, llm):
    client, services = site
    conversation_id, call_id, (ws_cm, *_) = mount(client, llm)
    ws_cm.__exit__(None, None, None)
    for name in ("other_bump", "echo", "toolbox_echo", "model_only"):  # another server's app-only tool, too
        refused = rpc(client, call_id, "tools/call", {"name": name, "arguments": {}})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == -32000, name
    assert "counter notes" in rpc(client, call_id, "resources/read", {"uri": "data://counter/notes"}).text
    log = (services.settings.log_dir / "app.jsonl").read_text()
    refusals = [json.loads(line) for line in log.splitlines() if '"app_request_refused"' in line]
    assert any(r["app"] == call_id and r["method"] == "tools/call" and "other_bump" in r["error"] for r in refusals)

    # The conversation now runs at a level that does not admit the app's own server.
    client.portal.call(lambda: services.store.update_conversation(conversation_id, compliance_level="External"))
    refused = rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 1}})
    assert refused.status_code == 403 and "not offered" in refused.json()["error"]["message"]
    assert rpc(client, call_id, "resources/read", {"uri": "data://counter/notes"}).status_code == 403
    assert client.get(f"/api/apps/{call_id}", headers=ALICE).status_code == 403


def test_an_apps_call_waits_for_the_users_approval(site, llm):
    client, _ = site
    _, call_id, (ws_cm, ws, _) = mount(client, llm)
    try:
        for approved, status in ((False, 403), (True, 200)):
            answers: list[Any] = []
            thread = threading.Thread(
                target=lambda answers=answers: answers.append(rpc(client, call_id, "tools/call", {"name": "reset"}))
            )
            thread.start()
            request = until(ws, "approval_request")[-1]
            assert request["tool"] == "counter_reset" and request["from_app"] == call_id
            assert (
                client.post(
                    f"/api/calls/{request['call_id']}/approval", json={"approved": approved}, headers=ALICE
                ).status_code
                == 204
            )
            thread.join(30)
            assert answers[0].status_code == status, answers[0].text
        assert answers[0].json()["result"]["content"][0]["text"] == "reset"
    finally:
        ws_cm.__exit__(None, None, None)


def test_malformed_requests_unknown_methods_and_floods_are_refused(site, llm):
    client, _ = site
    _, call_id, (ws_cm, *_) = mount(client, llm)
    ws_cm.__exit__(None, None, None)
    url = f"/api/apps/{call_id}/rpc"

    def error(response, status, code):
        assert response.status_code == status and response.json()["error"]["code"] == code, response.text

    error(client.post(url, content=b"{not json", headers=ALICE), 400, -32600)
    error(client.post(url, json={"params": {}}, headers=ALICE), 400, -32600)
    error(client.post(url, json={"method": "tools/call", "params": [1]}, headers=ALICE), 400, -32600)
    error(rpc(client, call_id, "tools/call", {"arguments": {}}), 400, -32602)
    error(rpc(client, call_id, "ui/update-model-context", {"content": "not a list"}), 400, -32602)
    error(rpc(client, call_id, "sampling/createMessage", {}), 404, -32601)
    assert (
        rpc(client, call_id, "notifications/message", {"level": "info", "data": "hello from the app"}).status_code
        == 200
    )

    answers = [rpc(client, call_id, "notifications/message", {"level": "debug", "data": i}) for i in range(40)]
    statuses = [a.status_code for a in answers]
    assert 429 in statuses and statuses[0] == 200
    # (checked on the flood's own refusal: a request after it may find a token refilled on a slow machine)
    error(answers[statuses.index(429)], 429, -32000)


def test_every_refusal_on_the_rpc_path_is_a_json_rpc_error_even_those_made_before_the_route(site):
    """The sign-in door, the router, the edge guard and the body limit answer an app's request
    with a JSON-RPC error like the route's own (the page hands its code to the app as it is)."""
    client, services = site
    url = "/api/apps/no-such-call/rpc"

    def error(response, status, code):
        assert response.status_code == status, response.text
        assert response.json()["error"]["code"] == code and response.json()["error"]["message"], response.text

    error(client.post(url, json={"method": "ping"}), 401, -32000)
    error(client.get(url, headers=ALICE), 405, -32600)
    error(
        client.post(url, json={"method": "ping"}, headers={**ALICE, "Origin": "https://elsewhere.example"}), 403, -32000
    )
    too_big = b"x" * (services.settings.max_request_bytes + 1)
    error(client.post(url, content=too_big, headers={**ALICE, "Content-Type": "application/json"}), 413, -32602)
    error(rpc(client, "no-such-call", "ping"), 404, -32601)


def test_the_apps_context_reaches_the_models_next_turn(site, llm):
    client, _ = site
    conversation_id, call_id, (ws_cm, ws, _) = mount(client, llm)
    try:
        update = {
            "content": [{"type": "text", "text": "The user zoomed to March."}],
            "structuredContent": {"month": "Mar"},
        }
        assert rpc(client, call_id, "ui/update-model-context", update).json() == {"result": {}}
        llm.enqueue(TextReply("March it is."))
        ws.send_json({"type": "chat", "content": "what am I looking at?", "conversation_id": conversation_id})
        until(ws, "message_done")
    finally:
        ws_cm.__exit__(None, None, None)
    system = llm.requests[-1]["messages"][0]
    assert system["role"] == "system" and "The user zoomed to March." in system["content"]
    assert '"month": "Mar"' in system["content"] and "counter_show_counter" in system["content"]


def test_an_app_mounts_again_after_the_host_restarts(tmp_path, llm):
    settings = build(tmp_path, llm)
    with running_app(settings) as (client, _):
        conversation_id, call_id, (ws_cm, *_) = mount(client, llm, start=9)
        ws_cm.__exit__(None, None, None)
    with running_app(settings) as (client, _):  # a new app process on the same database
        app = client.get(f"/api/apps/{call_id}", headers=ALICE).json()
        answer = rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 9}})
    assert app["conversation_id"] == conversation_id and app["tool_input"] == {"start": 9}
    assert app["tool_result"]["structuredContent"] == {"count": 9} and "ui/initialize" in app["html"]
    assert answer.json()["result"]["structuredContent"]["count"] == 10


def test_an_app_is_refused_once_the_users_groups_no_longer_admit_its_server(tmp_path, llm):
    with running_app(build(tmp_path, llm, alice_groups=("users", "team"))) as (client, services):
        _, call_id, (ws_cm, *_) = mount(client, llm, tool="team_show_counter")
        ws_cm.__exit__(None, None, None)
        assert rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 1}}).status_code == 200

        build(tmp_path, llm)  # alice leaves the team
        client.portal.call(services.life.reload)
        refused = rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 1}})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == -32000
        assert client.get(f"/api/apps/{call_id}", headers=ALICE).status_code == 403
        context = {"content": [{"type": "text", "text": "still here"}]}
        assert rpc(client, call_id, "ui/update-model-context", context).status_code == 403
        assert rpc(client, call_id, "resources/read", {"uri": "ui://counter/app.html"}).status_code == 403


def test_a_changed_app_is_not_mounted_until_a_call_of_it_is_approved(tmp_path, llm):
    with running_app(build(tmp_path, llm)) as (client, _):
        _, old_call, (ws_cm, *_) = mount(client, llm)
        ws_cm.__exit__(None, None, None)
    with running_app(build(tmp_path, llm, html_note="second")) as (client, _):  # the server ships another app
        refused = client.get(f"/api/apps/{old_call}", headers=ALICE)
        assert refused.status_code == 403 and "changed" in refused.json()["error"]["message"]

        llm.enqueue(ToolCallReply([ToolCall("counter_show_counter")]), TextReply("Shown."))
        with client.websocket_connect("/ws", headers=ALICE) as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "show it again"})
            request = until(ws, "approval_request")[-1]
            assert "app" in request["reason"] and "changed" in request["reason"]
            ws.send_json({"type": "approval_response", "call_id": request["call_id"], "approved": True})
            events = until(ws, "message_done")
        new_call = next(e for e in events if e["type"] == "app")["call_id"]
        assert "second" in client.get(f"/api/apps/{new_call}", headers=ALICE).json()["html"]


def test_the_dataviz_chart_app_calls_back_into_its_server(tmp_path, llm):
    """The bundled dataviz server over stdio: its chart mounts as an app, and the app's
    `chart_series` (app-only) runs through the host."""
    dataviz = {"command": "python", "args": ["main.py"], "cwd": "backend/mcp/dataviz"}
    write_config(
        tmp_path / "defaults",
        servers={"dataviz": dataviz},
        models=[double_model(llm)],
        default_model="double",
        groups={"alice@example.com": ["users"]},
    )
    csv_text = "month,sales,cost\nJan,10,5\nJan,2,1\nFeb,12,6\n"
    with running_app(make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)) as (client, _):
        config = {t["name"]: t for t in client.get("/api/config", headers=ALICE).json()["tools"]}
        assert config["dataviz_chart_csv"]["app"]["resource_uri"] == "ui://dataviz/chart.html"
        llm.enqueue(
            ToolCallReply([ToolCall("dataviz_chart_csv", json.dumps({"csv_text": csv_text, "y": "sales"}))]),
            TextReply("Charted."),
        )
        with client.websocket_connect("/ws", headers=ALICE) as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "chart it"})
            events = until(ws, "message_done")
        result = next(e for e in events if e["type"] == "tool_result")
        assert {a["name"] for a in result["artifacts"]} == {"chart.png", "report.html"}  # the V2 files stay
        call_id = next(e for e in events if e["type"] == "app")["call_id"]
        app = client.get(f"/api/apps/{call_id}", headers=ALICE).json()
        assert "chart_series" in app["html"] and app["prefers_border"] is True
        chart = app["tool_result"]["_meta"]["dataviz/chart"]
        assert chart["series"][0]["values"] == [10, 2, 12] and chart["numeric"] == ["sales", "cost"]
        assert "dataviz/chart" not in json.dumps(llm.requests[-1]["messages"])  # the model never sees it

        answer = rpc(
            client,
            call_id,
            "tools/call",
            {
                "name": "chart_series",
                "arguments": {"csv_text": app["tool_input"]["csv_text"], "y": "cost", "aggregate": "sum"},
            },
        )
        assert answer.status_code == 200, answer.text
        series = answer.json()["result"]["structuredContent"]
        assert (series["y"], series["labels"], series["values"]) == ("cost", ["Jan", "Feb"], [6, 6])


def test_an_incognito_chat_naming_anothers_conversation_gets_none_of_its_events(site, llm):
    """Bob names alice's stored conversation as his incognito chat's id: it is not found (as for
    a stored chat), and his socket hears nothing of the calls alice's app makes in her conversation."""
    client, _services = site
    conversation_id, call_id, (ws_cm, ws, _) = mount(client, llm)
    try:
        with client.websocket_connect("/ws", headers=BOB) as bob:
            bob.receive_json()
            bob.send_json({"type": "chat", "content": "hi", "incognito": True, "conversation_id": conversation_id})
            refused = bob.receive_json()
            assert refused["type"] == "error" and refused["code"] == "not_found", refused
            answer = rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 2}})
            assert answer.status_code == 200, answer.text
            assert until(ws, "tool_result")[-1]["from_app"] == call_id  # alice's page hears it
            bob.send_json({"type": "attach", "conversation_id": "bob-probe-0001"})  # a marker after anything sent
            heard = until(bob, "attached")
            assert [e["type"] for e in heard] == ["attached"], heard
    finally:
        ws_cm.__exit__(None, None, None)


def test_an_app_cannot_call_a_tool_no_administrator_approved(site, llm):
    client, services = site
    _, call_id, (ws_cm, *_) = mount(client, llm)
    ws_cm.__exit__(None, None, None)
    trust = services.pool.trust
    pin = trust.seen("counter", "bump")[0]

    def decide(kind: str):
        return lambda: trust.decide(
            kind, server="counter", tool="bump", qualified_name="counter_bump", pin=pin, by="root", before_state="x"
        )

    client.portal.call(decide("block"))
    try:
        refused = rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 1}})
        assert refused.status_code == 403 and "quarantined" in refused.json()["error"]["message"]
    finally:
        client.portal.call(decide("approve"))
    assert rpc(client, call_id, "tools/call", {"name": "bump", "arguments": {"count": 1}}).status_code == 200
