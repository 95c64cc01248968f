"""MCP 2026-07-28 change events and cache hints, with servers built on the SDK's `MCPServer`
(tests/support/servers/listening.py), which tells of changes only through
`subscriptions/listen`: a tool added at run time reaches the pages (`catalogue_changed`) and
the registry; a resource read is kept for the server's `ttlMs` and dropped when the server
says it changed; a `private` read is never served to another user of a shared session."""

from __future__ import annotations

import sys

import pytest

from tests.support.harness import PROJECT_ROOT, double_model, make_settings, running_app, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

pytestmark = [pytest.mark.timeout(180)]  # the module's fixture starts several server processes

LISTENING = PROJECT_ROOT / "tests" / "support" / "servers" / "listening.py"


def entry(scope: str) -> dict:
    return {"command": sys.executable, "args": [str(LISTENING), "--scope", scope], "approval": "never"}


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("listen")
    write_config(
        tmp / "defaults",
        servers={"pub": entry("public"), "priv": entry("private")},
        models=[double_model(llm)],
        default_model="double",
    )
    with running_app(make_settings(tmp)) as (client, services):
        yield client, services


def read(client, services, server: str, user: str) -> str:
    [artifact] = client.portal.call(services.pool.read_resource, server, "data://counter", user)
    return artifact.data.decode()


def run_tool(client, llm, tool: str) -> list[dict]:
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall(tool, "{}")]), TextReply("done"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": f"run {tool}"})
        events = until(ws, "message_done")
        if not any(e["type"] == "catalogue_changed" for e in events) and tool.endswith("grow"):
            events += until(ws, "catalogue_changed")
    return events


def test_both_servers_speak_2026(app):
    client, _ = app
    servers = {s["name"]: s["protocol_version"] for s in client.get("/api/config").json()["servers"]}
    assert servers == {"pub": "2026-07-28", "priv": "2026-07-28"}


def test_a_tool_added_at_run_time_is_heard_through_listen(app, llm):
    client, _ = app
    assert "pub_count_words" not in {t["name"] for t in client.get("/api/config").json()["tools"]}
    events = run_tool(client, llm, "pub_grow")
    assert {"type": "catalogue_changed", "server": "pub"} in events
    assert "pub_count_words" in {t["name"] for t in client.get("/api/config").json()["tools"]}


def test_a_public_read_is_kept_and_shared_until_the_server_says_it_changed(app, llm):
    client, services = app
    first = read(client, services, "pub", "ann@example.com")
    assert read(client, services, "pub", "bob@example.com") == first  # served from the cache
    run_tool(client, llm, "pub_touch")  # the server announces data://counter changed
    for _ in range(50):
        again = read(client, services, "pub", "ann@example.com")
        if again != first:
            break
        client.portal.call(__import__("anyio").sleep, 0.1)
    assert again != first


def test_a_private_read_is_never_served_to_another_user_of_a_shared_session(app):
    client, services = app
    ann = read(client, services, "priv", "ann@example.com")
    bob = read(client, services, "priv", "bob@example.com")
    assert ann != bob  # both reached the server
