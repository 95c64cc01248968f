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

from tests.support.harness import free_port, serve_app

__all__ = ["read_sse", "served"]


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
