"""Drive the app's doors over real sockets: the app served by uvicorn in a
thread (harness.serve_app), `/api/chat` read as server-sent events with httpx,
`/ws` with the websockets client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from websockets.sync.client import connect

from tests.support.harness import free_port, serve_app

__all__ = ["HttpDoor", "WebsocketDoor", "events_of", "read_sse", "served"]


@contextmanager
def served(settings: Any, environ: dict[str, str] | None = None) -> Iterator[tuple[str, Any]]:
    """The real app on 127.0.0.1, once every MCP server has settled: (base URL, services)."""
    from switchboard.services import build_services
    from switchboard.web.app import create_app

    services = build_services(settings, environ={"DOUBLE_KEY": "k", **(environ or {})})
    with serve_app(create_app(settings, services=services), free_port()) as base:
        deadline = time.monotonic() + 60
        while httpx.get(f"{base}/readyz").status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("the MCP servers did not become ready")
            time.sleep(0.1)
        yield base, services


def read_sse(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event name, data) of each server-sent event in a stream of lines."""
    name, data = "message", []
    for line in lines:
        if line == "":
            if data:
                yield name, "\n".join(data)
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))


def events_of(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for name, data in read_sse(lines):
        event = json.loads(data)
        assert event["type"] == name, (name, event)
        yield event


class WebsocketDoor:
    def __init__(self, base: str, path: str = "/ws") -> None:
        self.ws = connect(base.replace("http://", "ws://") + path, open_timeout=10)
        assert json.loads(self.ws.recv(timeout=10))["type"] == "session"

    def chat(self, body: dict[str, Any], refused: bool) -> Iterator[dict[str, Any]]:
        self.ws.send(json.dumps({"type": "chat", **body}))
        while True:
            event = json.loads(self.ws.recv(timeout=30))
            yield event
            if event["type"] == "message_done" or (refused and event["type"] == "error"):
                return  # a refused chat gets one error, and nothing follows

    def approve(self, call_id: str) -> None:
        self.ws.send(json.dumps({"type": "approval_response", "call_id": call_id, "approved": True}))

    def elicit(self, request_id: str, content: dict[str, Any] | None, action: str = "accept") -> None:
        self.ws.send(
            json.dumps({"type": "elicitation_response", "request_id": request_id, "action": action, "content": content})
        )

    def cancel(self, conversation_id: str) -> None:
        self.ws.send(json.dumps({"type": "cancel"}))

    def close(self) -> None:
        self.ws.close()


class HttpDoor:
    def __init__(self, base: str) -> None:
        self.client = httpx.Client(base_url=base, timeout=30)

    def chat(self, body: dict[str, Any], refused: bool) -> Iterator[dict[str, Any]]:
        with self.client.stream("POST", "/api/chat", json=body) as response:
            if response.status_code != 200:
                error = json.loads(response.read())["error"]
                yield {"type": "error", **{k: v for k, v in error.items() if v is not None}}
                return
            assert response.headers["content-type"].startswith("text/event-stream")
            yield from events_of(response.iter_lines())

    def approve(self, call_id: str) -> None:
        assert self.client.post(f"/api/calls/{call_id}/approval", json={"approved": True}).status_code == 204

    def elicit(self, request_id: str, content: dict[str, Any] | None, action: str = "accept") -> None:
        answer = {"action": action, "content": content}
        assert self.client.post(f"/api/elicitations/{request_id}", json=answer).status_code == 204

    def cancel(self, conversation_id: str) -> None:
        assert self.client.post(f"/api/conversations/{conversation_id}/cancel").status_code == 204

    def close(self) -> None:
        self.client.close()
