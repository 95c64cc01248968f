"""Two attached files and the shipped configuration with the offline demo model, served on a real
port so the bundled servers (separate processes) fetch the signed file links: each tool gets the
file it takes or the one named, never the other one."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from switchboard.services import build_services
from switchboard.settings import PROJECT_ROOT
from switchboard.web.app import create_app
from tests.support.harness import free_port, make_settings, serve_app, wait_ready
from tests.support.pdf import build_pdf

CSV = b"month,sales,costs\nJan,3,1\nFeb,5,2\nMar,4,2\n"
CHART = {"x": "month", "y": ["sales", "costs"]}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("demo-files")
    (tmp / "overrides").mkdir()
    port = free_port()
    settings = make_settings(tmp, port=port, defaults_dir=PROJECT_ROOT / "config" / "defaults")
    services = build_services(settings, environ={})  # no model keys: the demo model
    with serve_app(create_app(settings, services=services), port) as url:
        wait_ready(url)
        yield url


def upload(base: str, name: str, data: bytes, mime: str) -> str:
    response = httpx.post(f"{base}/api/files", files={"file": (name, data, mime)})
    assert response.status_code == 200, response.text
    return response.json()["id"]


async def chat(base: str, message: dict) -> list[dict]:
    async with websockets.connect(base.replace("http", "ws") + "/ws") as ws:
        await ws.recv()
        await ws.send(json.dumps({"type": "chat", **message}))
        events: list[dict] = []
        while not events or events[-1]["type"] not in ("message_done", "error"):
            events.append(json.loads(await asyncio.wait_for(ws.recv(), 90)))
        return events


def test_of_a_csv_and_a_pdf_dataviz_gets_the_csv_and_a_named_file_in_a_later_message(base):
    files = [
        upload(base, "sales.csv", CSV, "text/csv"),
        upload(base, "report.pdf", build_pdf(["Q3"]), "application/pdf"),
    ]

    events = asyncio.run(chat(base, {"content": f"dataviz_chart_csv {json.dumps(CHART)}", "files": files}))
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"], result["content"]
    assert (
        f"/api/files/{files[0]}/content?"
        in next(e for e in events if e["type"] == "tool_start")["arguments"]["file_url"]
    )
    assert "image/png" in {a["mime"] for a in result["artifacts"]}
    conversation_id = events[-1]["conversation_id"]

    named = {"file_url": "sales.csv", **CHART}
    events = asyncio.run(
        chat(base, {"content": f"dataviz_chart_csv {json.dumps(named)}", "conversation_id": conversation_id})
    )
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"], result["content"]
    assert (
        f"/api/files/{files[0]}/content?"
        in next(e for e in events if e["type"] == "tool_start")["arguments"]["file_url"]
    )

    events = asyncio.run(
        chat(base, {"content": 'pdfbasic_analyze_pdf {"file_url": "report.pdf"}', "conversation_id": conversation_id})
    )
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and "1 page" in result["content"], result["content"]


def test_two_csv_files_and_no_name_the_call_says_which_files_there_are(base):
    files = [upload(base, "north.csv", CSV, "text/csv"), upload(base, "south.csv", CSV, "text/csv")]

    events = asyncio.run(chat(base, {"content": f"dataviz_chart_csv {json.dumps(CHART)}", "files": files}))

    result = next(e for e in events if e["type"] == "tool_result")
    assert not result["ok"] and not any(e["type"] == "tool_start" for e in events)
    assert "north.csv (text/csv" in result["content"] and "south.csv (text/csv" in result["content"]
    assert "Name the file to use in 'file_url'" in result["content"]
