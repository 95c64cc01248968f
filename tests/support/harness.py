"""Build a real app for tests: config files in a temp folder, real MCP
servers, the HTTP LLM double, Starlette's TestClient (real websockets)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from switchboard.settings import PROJECT_ROOT, Settings

__all__ = [
    "TOOLBOX",
    "free_port",
    "make_settings",
    "run_toolbox_server",
    "serve_app",
    "toolbox_entry",
    "wait_for_port",
    "wait_ready",
    "write_config",
    "write_toolbox_site",
]

TOOLBOX = PROJECT_ROOT / "tests" / "support" / "servers" / "toolbox.py"


def toolbox_entry(**extra: Any) -> dict[str, Any]:
    return {"command": "python", "args": [str(TOOLBOX)], **extra}


def write_config(
    folder: Path,
    *,
    servers: dict[str, Any] | None = None,
    models: list[dict[str, Any]] | None = None,
    default_model: str | None = None,
    groups: dict[str, list[str]] | None = None,
    system_prompt: str = "You are a test assistant.",
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mcp.json").write_text(json.dumps({"servers": servers or {}}))
    llm: dict[str, Any] = {"models": models or [{"name": "demo", "model": "switchboard/demo"}]}
    if default_model:
        llm["default_model"] = default_model
    (folder / "llmconfig.yml").write_text(yaml.safe_dump(llm))
    (folder / "groups.yml").write_text(yaml.safe_dump({"users": groups or {"*": ["users"]}, "admin_group": "admin"}))
    (folder / "compliance-levels.json").write_text(
        json.dumps(
            {
                "levels": [
                    {"name": "Public", "allowed_with": []},
                    {"name": "Internal", "allowed_with": ["Public"]},
                    {"name": "External", "allowed_with": ["Public"]},
                ]
            }
        )
    )
    (folder / "system-prompt.md").write_text(system_prompt)


def write_toolbox_site(site: Path, llm: Any) -> None:
    """A site's shipped defaults (`site/defaults`): the toolbox server and the LLM double `llm` as
    the default model."""
    write_config(
        site / "defaults", servers={"toolbox": toolbox_entry()}, models=[double_model(llm)], default_model="double"
    )


def make_settings(tmp: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "defaults_dir": tmp / "defaults",
        "config_dir": tmp / "overrides",
        "data_dir": tmp / "data",
        "log_dir": tmp / "logs",
        "server_start_timeout_s": 30.0,
        # Starlette's TestClient sends `Host: testserver`; the default admits only loopback names.
        "allowed_hosts": ["testserver"],
        "registry_urls": [],  # tests never ask the public MCP registry; theirs is the registry double
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, timeout_s: float = 30.0) -> None:
    """Until a server process listens on 127.0.0.1:`port`; fails at once if it exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}") from None
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {timeout_s:g} s")


def wait_ready(base: str, timeout_s: float = 90.0, what: Callable[[], str] | str = "the app") -> None:
    """Until `GET base/readyz` answers 200 (every server ready); a request that times out on a
    busy machine (the app still loading) is tried again. `what`: said on failure (or a callable
    that says it, e.g. the end of the app's log)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=30).status_code == 200:
                return
        except httpx.TimeoutException:
            pass
        assert time.monotonic() < deadline, what() if callable(what) else f"{what} did not become ready"
        time.sleep(0.2)


@contextmanager
def run_toolbox_server(mode: str) -> Iterator[str]:
    """The toolbox served over `http` or `sse` on 127.0.0.1; yields its URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(TOOLBOX), f"--{mode}", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/{'mcp' if mode == 'http' else 'sse'}"
    try:
        wait_for_port(port, proc, f"toolbox --{mode}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def serve_app(app: Any, port: int) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1:`port` in a thread; yields its base URL.
    MCP servers (separate processes) can reach it, unlike TestClient."""
    import threading

    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="websockets-sansio")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def double_model(llm: Any) -> dict[str, Any]:
    """A model entry for llmconfig that routes to the HTTP LLM double (key env DOUBLE_KEY)."""
    return {"name": "double", "model": "openai/double", "api_base": llm.base_url, "api_key_env": "DOUBLE_KEY"}


@contextmanager
def running_app(settings: Any, environ: dict[str, str] | None = None) -> Iterator[tuple[Any, Any]]:
    """The real app under Starlette's TestClient (real websockets, lifespan run),
    yielded once every MCP server has settled: (client, services)."""
    from starlette.testclient import TestClient

    from switchboard.services import build_services
    from switchboard.web.app import create_app

    services = build_services(settings, environ={"DOUBLE_KEY": "k", **(environ or {})})
    with TestClient(create_app(settings, services=services)) as client:
        client.portal.call(services.pool.wait_settled, 60)
        yield client, services


def until(ws: Any, *types: str) -> list[dict[str, Any]]:
    """Receive events from a TestClient websocket up to and including one of `types`."""
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] not in types:
        events.append(ws.receive_json())
    return events
