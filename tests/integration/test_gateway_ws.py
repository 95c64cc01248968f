"""The tool gateway end to end: the shipped configuration, the offline demo
model, the websocket; a chat asks for gateway exposure and the demo finds
and calls tools through it."""

from __future__ import annotations

import json
import shutil

import pytest
from starlette.testclient import TestClient

from switchboard.services import build_services
from switchboard.settings import PROJECT_ROOT
from switchboard.web.app import create_app
from tests.support.harness import make_settings


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gateway")
    overrides = tmp / "overrides"
    overrides.mkdir()
    shutil.copy(PROJECT_ROOT / "config" / "examples" / "time.json", overrides / "mcp.json")
    settings = make_settings(tmp, defaults_dir=PROJECT_ROOT / "config" / "defaults", config_dir=overrides)
    services = build_services(settings, environ={})
    with TestClient(create_app(settings, services=services)) as client:
        client.portal.call(services.pool.wait_settled, 90)
        yield client


def turn(ws, content, **extra):
    ws.send_json({"type": "chat", "content": content, "tool_exposure": "gateway", **extra})
    events = []
    while events[-1:] == [] or events[-1]["type"] != "message_done":
        events.append(ws.receive_json())
    return events


def test_search_then_call_through_the_gateway(app):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        found = turn(ws, "search current time in a timezone")
        called = turn(ws, 'run get_current_time {"timezone": "Europe/Oslo"}')

    search = next(e for e in found if e["type"] == "tool_result")
    assert search["tool"] == "switchboard_search_tools" and search["server"] == "switchboard"
    assert json.loads(search["content"])[0]["name"] == "time_get_current_time"
    start = next(e for e in called if e["type"] == "tool_start")
    result = next(e for e in called if e["type"] == "tool_result")
    assert (start["tool"], start["server"]) == ("time_get_current_time", "time")
    assert result["ok"] and "Europe/Oslo" in result["content"]
    assert called[-1]["finish_reason"] == "stop" and "time_get_current_time" in called[-1]["html"]


def test_a_tool_left_out_of_the_chats_selection_cannot_be_called_through_the_gateway(app):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = turn(ws, 'run get_current_time {"timezone": "UTC"}', tools=["dataviz_describe_csv"])
    result = next(e for e in events if e["type"] == "tool_result")
    assert not result["ok"] and "no tool named" in result["content"]
    assert not any(e["type"] == "tool_start" and e["tool"] == "time_get_current_time" for e in events)


def test_the_config_says_whether_the_gateway_is_on(app):
    config = app.get("/api/config").json()
    demo = next(m for m in config["models"] if m["name"] == "demo")
    gateway = demo["gateway"]
    assert gateway["exposure"] == "auto" and gateway["threshold_tokens"] == 4000
    for_model = [t for t in config["tools"] if "model" in t.get("app", {}).get("visibility", ["model"])]
    assert len(for_model) < len(config["tools"])  # dataviz_chart_series is for its app only
    assert gateway["tools"] == len(for_model) and gateway["tool_tokens"] > 0
    assert gateway["active"] == (gateway["tool_tokens"] > 4000)
