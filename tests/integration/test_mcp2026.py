"""MCP 2026-07-28 through the host, end to end: the version each server negotiates, multi
round-trip requests (MRTR) answered by the user through the websocket and through `/api/chat`,
over stdio and streamable HTTP; a looping server cut off; a 2025-only and a 2026-only server in
one conversation; standard headers that a tool's arguments cannot inject into; `$ref` schemas
reaching the model intact; a stateless HTTP server restarted between two requests.
Real sockets (the app served by uvicorn), real server processes (tests/support/servers/eras.py),
the HTTP LLM double."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.support.doors import HttpDoor, WebsocketDoor, served
from tests.support.harness import PROJECT_ROOT, double_model, free_port, make_settings, wait_for_port, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

pytestmark = [pytest.mark.timeout(180)]  # the module's fixture starts several server processes

ERAS = PROJECT_ROOT / "tests" / "support" / "servers" / "eras.py"
HOSTILE = "x\r\nX-Injected: yes\r\n\r\n(bad) {header} é"


def eras_entry(era: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(ERAS), "--era", era], "approval": "never"}


@contextmanager
def eras_http(era: str, port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, str(ERAS), "--era", era, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc, "eras --http")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("mcp2026")
    port = free_port()
    with eras_http("2026", port) as proc:
        servers = {
            "trip": eras_entry("any"),
            "old": eras_entry("2025"),
            "new": eras_entry("2026"),
            "web": {"url": f"http://127.0.0.1:{port}/mcp", "approval": "never"},
        }
        write_config(tmp / "defaults", servers=servers, models=[double_model(llm)], default_model="double")
        with served(make_settings(tmp, mcp_input_rounds=3, elicitation_timeout_s=20)) as (base, services):
            yield base, port, proc


DOORS = {"websocket": WebsocketDoor, "http": HttpDoor}
ANSWERS = {"Which city?": {"city": "Lisbon"}, "How many days?": {"days": 3}, "Again?": {"city": "Oslo"}}


def drive(door: Any, body: dict[str, Any], decline: str | None = None) -> list[dict[str, Any]]:
    """One turn, answering every question (declining the one asked `decline`) and approving sampling."""
    events = []
    for event in door.chat(body, refused=False):
        events.append(event)
        if event["type"] == "elicitation_request":
            if event["message"] == decline:
                door.elicit(event["request_id"], None, action="decline")
            else:
                door.elicit(event["request_id"], ANSWERS[event["message"]])
        elif event["type"] == "approval_request":
            door.approve(event["call_id"])
    return events


def result_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool_result")


def test_each_server_shows_the_version_it_negotiated(site):
    base, _, _ = site
    servers = {s["name"]: s for s in httpx.get(f"{base}/api/config").json()["servers"]}
    assert servers["old"]["protocol_version"] == "2025-11-25"
    assert servers["new"]["protocol_version"] == "2026-07-28"
    assert servers["trip"]["protocol_version"] == "2026-07-28"
    assert servers["web"]["protocol_version"] == "2026-07-28"


@pytest.mark.parametrize("door_name", DOORS)
@pytest.mark.parametrize("server", ["trip", "web", "old"])
def test_multi_round_input_is_asked_of_the_user_and_the_call_completes(site, llm, door_name, server):
    """Round 1 asks two questions at once, round 2 asks the model (sampling, approved by the
    user); the retried request carries the answers and the server's state. The 2025 server
    asks the same through server requests."""
    base, _, _ = site
    llm.reset()
    llm.enqueue(
        ToolCallReply([ToolCall(f"{server}_plan_trip", "{}")]), TextReply("Sunny and old."), TextReply("Booked.")
    )
    door = DOORS[door_name](base)
    try:
        events = drive(door, {"content": "plan a trip"})
    finally:
        door.close()
    asked = [e["message"] for e in events if e["type"] == "elicitation_request"]
    assert sorted(asked) == ["How many days?", "Which city?"]
    assert any(e["type"] == "approval_request" and e.get("kind") == "sampling" for e in events)
    result = result_of(events)
    assert result["ok"], result
    assert result["content"] == "trip to Lisbon for 3 days: Sunny and old."
    assert "Write a blurb about Lisbon" in json.dumps(llm.requests[1]["messages"])


@pytest.mark.parametrize("server", ["trip", "web"])
def test_a_declined_question_is_answered_as_declined(site, llm, server):
    base, _, _ = site
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall(f"{server}_plan_trip", "{}")]), TextReply("ok"))
    door = WebsocketDoor(base)
    try:
        events = drive(door, {"content": "plan a trip"}, decline="How many days?")
    finally:
        door.close()
    assert result_of(events)["content"] == "no trip: days decline"


def test_a_server_that_keeps_asking_is_cut_off_with_a_clear_error(site, llm):
    base, _, _ = site
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall("trip_ask_forever", "{}")]), TextReply("it gave up"))
    door = HttpDoor(base)
    try:
        events = drive(door, {"content": "ask"})
    finally:
        door.close()
    assert len([e for e in events if e["type"] == "elicitation_request"]) == 3  # mcp_input_rounds
    result = result_of(events)
    assert not result["ok"]
    assert "kept asking for input for more than 3 rounds" in result["content"]


def test_a_2025_server_and_a_2026_server_in_one_conversation(site, llm):
    base, _, _ = site
    llm.reset()
    llm.enqueue(
        ToolCallReply([ToolCall("old_era", "{}"), ToolCall("new_era", "{}")]),
        TextReply("both"),
        ToolCallReply([ToolCall("new_plan_trip", "{}")]),
        TextReply("blurb"),
        TextReply("done"),
    )
    door = WebsocketDoor(base)
    try:
        first = drive(door, {"content": "which eras?", "conversation_id": "two-eras-1"})
        second = drive(door, {"content": "now a trip", "conversation_id": "two-eras-1"})
    finally:
        door.close()
    eras = {e["server"]: e["content"] for e in first if e["type"] == "tool_result"}
    assert eras == {"old": "handshake", "new": "2026-07-28"}
    assert result_of(second)["content"] == "trip to Lisbon for 3 days: blurb"


def test_a_hostile_argument_cannot_inject_headers(site, llm):
    """`label` is mirrored into `Mcp-Param-Label`: CR/LF and non-token characters travel
    encoded, the server sees the argument unchanged and no header of the attacker's."""
    base, _, _ = site
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall("web_tag", json.dumps({"label": HOSTILE}))]), TextReply("tagged"))
    door = WebsocketDoor(base)
    try:
        events = drive(door, {"content": "tag it"})
    finally:
        door.close()
    result = result_of(events)
    assert result["ok"], result
    seen = json.loads(result["content"])
    assert seen["label"] == HOSTILE
    assert seen["headers"]["mcp-method"] == "tools/call"
    assert seen["headers"]["mcp-name"] == "tag"
    assert seen["headers"]["mcp-param-label"].startswith("=?base64?")
    assert not [name for name in seen["header_names"] if "injected" in name]


def test_a_ref_schema_reaches_the_model_intact(site, llm):
    base, _, _ = site
    llm.reset()
    llm.enqueue(TextReply("noted"))
    door = WebsocketDoor(base)
    try:
        drive(door, {"content": "what can you book?"})
    finally:
        door.close()
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in llm.requests[-1]["tools"]}
    for name in ("trip_book", "new_book", "old_book", "web_book"):
        schema = tools[name]
        assert schema["properties"]["trip"] == {"$ref": "#/$defs/trip"}
        assert schema["$defs"]["trip"]["properties"]["traveller"] == {"$ref": "#/$defs/traveller"}


def test_a_stateless_server_restarted_between_two_requests_just_works(site, llm):
    base, port, first_server = site
    door = WebsocketDoor(base)
    try:
        llm.reset()
        llm.enqueue(ToolCallReply([ToolCall("web_era", "{}")]), TextReply("one"))
        assert result_of(drive(door, {"content": "era?"}))["content"] == "2026-07-28"
        first_server.terminate()  # stopped; another process takes its port
        first_server.wait(timeout=10)
        time.sleep(6)  # down longer than the host's idle probe interval (5 s)
        with eras_http("2026", port):
            llm.enqueue(ToolCallReply([ToolCall("web_era", "{}")]), TextReply("two"))
            result = result_of(drive(door, {"content": "era again?"}))
            assert result["ok"], result
            assert result["content"] == "2026-07-28"
    finally:
        door.close()


def test_check_config_connect_shows_each_servers_protocol_version(tmp_path, monkeypatch, capsys):
    from switchboard.__main__ import main

    write_config(tmp_path / "defaults", servers={"old": eras_entry("2025"), "new": eras_entry("2026")})
    monkeypatch.setenv("SWITCHBOARD_DEFAULTS_DIR", str(tmp_path / "defaults"))
    monkeypatch.setenv("SWITCHBOARD_CONFIG_DIR", str(tmp_path / "overrides"))
    monkeypatch.setenv("SWITCHBOARD_LOG_DIR", str(tmp_path / "logs"))
    assert main(["check-config", "--connect"]) == 0
    out = capsys.readouterr().out
    assert "server 'old': ready, protocol 2025-11-25" in out
    assert "server 'new': ready, protocol 2026-07-28" in out
