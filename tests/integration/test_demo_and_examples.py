"""The shipped configuration with no API key: bundled servers, the offline
demo model, and a third-party server from config/examples through the loop."""

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
    tmp = tmp_path_factory.mktemp("demo")
    overrides = tmp / "overrides"
    overrides.mkdir()
    shutil.copy(PROJECT_ROOT / "config" / "examples" / "time.json", overrides / "mcp.json")
    settings = make_settings(tmp, defaults_dir=PROJECT_ROOT / "config" / "defaults", config_dir=overrides)
    services = build_services(settings, environ={})  # no model keys at all
    with TestClient(create_app(settings, services=services)) as client:
        client.portal.call(services.pool.wait_settled, 90)
        yield client


def turn(ws, content):
    ws.send_json({"type": "chat", "content": content})
    events = []
    while events[-1:] == [] or events[-1]["type"] != "message_done":
        events.append(ws.receive_json())
    return events


def test_the_shipped_config_comes_up_ready_with_the_demo_model(app):
    ready = app.get("/readyz")
    assert ready.status_code == 200, ready.json()
    assert {"pdfbasic", "dataviz", "time"} <= set(ready.json()["servers"])
    config = app.get("/api/config").json()
    assert config["default_model"] == "demo"
    demo = next(m for m in config["models"] if m["name"] == "demo")
    assert demo["demo"] and demo["available"] and "demo" in demo["description"].lower()
    unavailable = next(m for m in config["models"] if m["name"] == "gpt-4o-mini")
    assert not unavailable["available"] and "OPENAI_API_KEY" in unavailable["reason"]


def test_what_can_you_do_lists_the_tools(app):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = turn(ws, "what can you do")
    text = "".join(e["text"] for e in events if e["type"] == "token")
    for name in ("pdfbasic_analyze_pdf", "dataviz_chart_csv", "time_get_current_time"):
        assert name in text
    assert "demo" in text.lower()
    assert not any(e["type"] == "tool_start" for e in events)


def test_naming_a_bundled_tool_runs_it_and_summarises(app):
    args = json.dumps({"csv_text": "city,temp\nOslo,3\nRome,18\n"})
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = turn(ws, f"please run describe_csv {args}")
    start = next(e for e in events if e["type"] == "tool_start")
    assert start["tool"] == "dataviz_describe_csv" and start["arguments"]["csv_text"].startswith("city,temp")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"], result["content"]
    assert "temp" in result["content"]
    assert events[-1]["finish_reason"] == "stop" and "dataviz_describe_csv" in events[-1]["html"]


def test_a_chart_comes_back_as_artifacts(app):
    args = json.dumps({"csv_text": "month,sales\nJan,3\nFeb,5\nMar,4\n", "x": "month", "y": ["sales"]})
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = turn(ws, f"dataviz_chart_csv {args}")
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"], result["content"]
    mimes = {a["mime"] for a in result["artifacts"]}
    assert {"image/png", "text/html"} <= mimes
    png = next(a for a in result["artifacts"] if a["mime"] == "image/png")
    assert app.get(png["url"]).content.startswith(b"\x89PNG")
    assert result["display"]["open_canvas"] is True


def test_a_third_party_server_from_the_examples_runs_through_the_loop(app):
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = turn(ws, 'time_get_current_time {"timezone": "UTC"}')
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and result["server"] == "time"
    assert "UTC" in result["content"]


def test_the_demo_model_ignores_words_in_the_attached_files_note(app):
    """The host's note names the file and its type ("text/plain"); only the user's own
    words may name a tool."""
    upload = app.post("/api/files", files={"file": ("notes.txt", b"plain text notes", "text/plain")}).json()
    with app.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "what is this file?", "files": [upload["id"]]})
        events = []
        while events[-1:] == [] or events[-1]["type"] != "message_done":
            events.append(ws.receive_json())
    assert not any(e["type"] in ("tool_start", "approval_request") for e in events)
    assert "demo model" in "".join(e["text"] for e in events if e["type"] == "token")
