"""The front door `switchboard serve` runs: /healthz at once, everything else once the app is built."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from websockets.sync.client import connect

from switchboard.web.boot import BootingApp
from tests.support.harness import free_port, serve_app, write_config


def _inner_app(events: list[str]) -> Starlette:
    @asynccontextmanager
    async def lifespan(app):
        events.append("started")
        yield
        events.append("stopped")

    async def hello(request):
        return JSONResponse({"hello": "world"})

    async def echo(websocket):
        await websocket.accept()
        await websocket.send_text(await websocket.receive_text())
        await websocket.close()

    async def ready(request):
        return JSONResponse({"status": "ready"})

    return Starlette(
        routes=[Route("/hello", hello), Route("/readyz", ready), WebSocketRoute("/ws", echo)], lifespan=lifespan
    )


def test_healthz_answers_while_the_app_loads_and_other_requests_wait_for_it():
    release = threading.Event()
    events: list[str] = []

    def factory():
        assert release.wait(30)
        return _inner_app(events)

    with serve_app(BootingApp(factory), free_port()) as url:
        health = httpx.get(f"{url}/healthz", timeout=5)
        assert health.status_code == 200 and health.json() == {"status": "ok", "app": "loading"}
        assert health.headers["content-type"] == "application/json" and health.headers["cache-control"] == "no-store"

        answers: list[httpx.Response] = []
        waiting = threading.Thread(target=lambda: answers.append(httpx.get(f"{url}/hello", timeout=30)))
        waiting.start()
        time.sleep(0.3)
        assert not answers, "a request before the app is built waits for it"
        release.set()
        waiting.join(30)
        assert answers[0].status_code == 200 and answers[0].json() == {"hello": "world"}
        assert events == ["started"]

        with connect(url.replace("http", "ws") + "/ws", open_timeout=10) as ws:
            ws.send("ping")
            assert ws.recv(timeout=10) == "ping"
    assert events == ["started", "stopped"], "the app's own lifespan ran at shutdown too"


def test_readyz_answers_at_once_while_the_app_loads_then_the_app_answers_it():
    """A load balancer polls /readyz right after /healthz: it learns "starting" now, not once the
    app has loaded (it used to wait for the load, 4.9 s on a busy machine)."""
    release = threading.Event()

    def factory():
        assert release.wait(30)
        return _inner_app([])

    with serve_app(BootingApp(factory), free_port()) as url:
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        ready = httpx.get(f"{url}/readyz", timeout=10)  # the load is held: waiting for it would time out
        assert not release.is_set()
        assert ready.status_code == 503 and ready.json() == {"status": "starting", "reason": "the app is still loading"}
        assert ready.headers["cache-control"] == "no-store"
        release.set()
        deadline = time.monotonic() + 30
        while (ready := httpx.get(f"{url}/readyz", timeout=10)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.status_code == 200 and ready.json() == {"status": "ready"}, "then the app's own /readyz answers"


@pytest.mark.parametrize("builds", [True, False])
def test_the_garbage_collector_rests_while_the_app_loads_and_works_after(builds):
    """Off while the app loads (it makes long-lived objects by the hundred thousand), then on again
    with what loaded frozen, whether the app could be built or not."""
    during: list[bool] = []

    def factory():
        during.append(gc.isenabled())
        if not builds:
            raise RuntimeError("cannot build")
        return _inner_app([])

    frozen = gc.get_freeze_count()
    booting = BootingApp(factory)
    try:
        with serve_app(booting, free_port()):
            deadline = time.monotonic() + 10
            while not (gc.isenabled() and (booting.app or booting.error)) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert during == [False] and (booting.app is not None) == builds
            assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()  # the rest of the test run collects as usual
        gc.enable()


def test_an_app_that_cannot_be_built_is_reported_not_hidden(capfd):
    def factory():
        raise RuntimeError("llmconfig.yml is unreadable")

    booting = BootingApp(factory)
    with serve_app(booting, free_port()) as url:
        deadline = time.monotonic() + 10
        while (health := httpx.get(f"{url}/healthz", timeout=5)).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert health.status_code == 503
        assert health.json() == {"status": "failed", "error": "RuntimeError: llmconfig.yml is unreadable"}
        ready = httpx.get(f"{url}/readyz", timeout=5)
        assert ready.status_code == 503 and ready.json()["status"] == "not_ready"
        assert "llmconfig.yml is unreadable" in ready.json()["reason"]
        other = httpx.get(f"{url}/api/config", timeout=5)
        assert other.status_code == 503
        assert "llmconfig.yml is unreadable" in other.json()["error"]["message"]
    assert "Switchboard failed to start" in capfd.readouterr().err


@pytest.mark.timeout(240)  # two workers and a PostgreSQL server start, slowly on a busy machine
@pytest.mark.parametrize("workers", [1, 2])
def test_switchboard_serve_answers_healthz_before_the_app_is_imported(tmp_path, workers, request):
    """The real command: /healthz is up before FastAPI and the MCP SDK are loaded, then the
    app serves, in one process or in several (SWITCHBOARD_WORKERS, on PostgreSQL)."""
    write_config(tmp_path / "defaults", servers={})
    port = free_port()
    env = {
        **os.environ,
        "SWITCHBOARD_DEFAULTS_DIR": str(tmp_path / "defaults"),
        "SWITCHBOARD_CONFIG_DIR": str(tmp_path / "overrides"),
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "SWITCHBOARD_LOG_DIR": str(tmp_path / "logs"),
    }
    if workers > 1:  # several workers share turns only through PostgreSQL (SQLite is refused)
        env["SWITCHBOARD_DATABASE_URL"] = request.getfixturevalue("postgres_url")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "switchboard",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        bodies = []
        while time.monotonic() < deadline:
            try:
                bodies.append(httpx.get(f"{base}/healthz", timeout=5).json())
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.01)
        assert bodies and bodies[0]["status"] == "ok"
        config = httpx.get(f"{base}/api/config", timeout=60)
        assert config.status_code == 200 and "servers" in config.json()
        if workers == 1:  # with several, the request may reach a worker still loading
            assert httpx.get(f"{base}/healthz", timeout=5).json() == {"status": "ok"}
        for _ in range(2 * workers):  # connections spread over the workers: each one answers a turn
            with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30) as ws:
                assert json.loads(ws.recv(timeout=30))["type"] == "session"
                ws.send(json.dumps({"type": "chat", "content": "hello"}))
                while (event := json.loads(ws.recv(timeout=60)))["type"] != "message_done":
                    assert event["type"] != "error", event
                assert event["finish_reason"] == "stop"
    finally:
        proc.terminate()
        proc.wait(30)  # uvicorn re-raises SIGTERM after a graceful shutdown
    events = [json.loads(line).get("event") for line in (tmp_path / "logs" / "app.jsonl").read_text().splitlines()]
    assert events[-1] == "shutdown", "the app's own shutdown ran"
