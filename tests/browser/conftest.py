"""Real Chromium against the real app: uvicorn in a background thread on a
free port, real stdio MCP servers, litellm talking to the HTTP LLM double."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from playwright.sync_api import expect
from websockets.sync.client import connect as ws_connect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.support.harness import free_port, make_settings, toolbox_entry, wait_ready, write_config
from tests.support.llm_double import LLMDouble, TextReply

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
FIXTURES = Path(__file__).resolve().parents[1] / "support" / "servers" / "browser_fixtures.py"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
HOSTILE_DESCRIPTION = "Hostile <script>alert('server description')</script><img src=x onerror=alert(9)>"


def _require_chromium() -> None:
    if Path(CHROMIUM).exists() or shutil.which("chromium"):
        return
    message = f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


class LiveServer:
    """The app under uvicorn in a thread; `stop()`/`start()` cut and restore it
    on the same port (a real outage, as the browser sees it)."""

    def __init__(self, app, port: int) -> None:
        self.app = app
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True, name="switchboard-uvicorn")
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the app did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=15)

    def wait_ready(self, timeout: float = 60) -> None:
        wait_ready(self.url, timeout, lambda: f"servers not ready: {httpx.get(f'{self.url}/readyz').text}")


@contextmanager
def ready_app(settings, environ: dict[str, str] | None = None, port: int | None = None) -> Iterator[LiveServer]:
    """The app of `settings` served on 127.0.0.1 (a free port unless given) once its MCP servers are
    ready; stopped at the end."""
    services = build_services(settings, environ=environ or {})
    server = LiveServer(create_app(settings, services=services), port or free_port())
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def llm():
    with LLMDouble() as double:
        yield double


@pytest.fixture(scope="session")
def live(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("browser")
    write_config(
        tmp / "defaults",
        servers={
            "toolbox": toolbox_entry(description="Test tools: echo, slow, ask_name, delete_everything…"),
            "fixtures": {"command": "python", "args": [str(FIXTURES)], "description": HOSTILE_DESCRIPTION},
            "trusted": {
                "command": "python",
                "args": [str(FIXTURES)],
                "description": "Trusted with scripts in its pages",
                "artifact_scripts": True,
                "tools": {"allow": ["scripted_page"]},
            },
            "dataviz": {
                "command": "python",
                "args": ["main.py"],
                "cwd": "backend/mcp/dataviz",
                "description": "Charts and statistics for CSV data",
                "compliance_level": "External",
                "file_types": ["text/csv", ".csv"],
            },
            "broken": {
                "command": "python",
                "args": ["-c", "import sys; sys.exit('cannot start: no licence')"],
                "description": "A server that fails to start",
            },
        },
        models=[
            {
                "name": "double",
                "model": "openai/double",
                "api_base": llm.base_url,
                "api_key_env": "DOUBLE_KEY",
                "description": "The scripted test model",
            },
            {"name": "demo", "model": "switchboard/demo", "description": "Offline demo model"},
            {"name": "paid", "model": "openai/gpt-4o-mini", "api_key_env": "MISSING_KEY", "description": "Needs a key"},
        ],
        default_model="double",
        groups={"dev@localhost": ["users"]},
    )
    port = free_port()
    settings = make_settings(tmp, port=port)  # the signed file URLs tools fetch point at this server
    services = build_services(settings, environ={"DOUBLE_KEY": "x", "PATH": "/usr/bin:/bin"})
    server = LiveServer(create_app(settings, services=services), port)
    server.start()
    try:
        _wait_settled(server)
        _warm_up(server, llm)
        yield server
    finally:
        server.stop()


def _warm_up(server: LiveServer, llm: LLMDouble) -> None:
    """One turn before the tests: litellm's first call imports a lot."""
    llm.enqueue(TextReply("warm"))
    with ws_connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=10) as ws:
        ws.recv(timeout=10)
        ws.send(json.dumps({"type": "chat", "content": "warm up"}))
        while json.loads(ws.recv(timeout=30))["type"] != "message_done":
            pass


def _wait_settled(server: LiveServer, timeout: float = 60) -> None:
    """Every server but `broken` is ready, and `broken` has failed."""
    deadline = time.monotonic() + timeout
    counts: dict = {}
    while time.monotonic() < deadline:  # /readyz gives counts only to a non-admin (the dev user here)
        counts = httpx.get(f"{server.url}/readyz", timeout=5).json()["counts"]
        if counts["starting"] == 0 and counts["failed"] == 1 and counts["ready"] == counts["total"] - 1:
            return
        time.sleep(0.2)
    raise RuntimeError(f"servers did not settle: {counts}")


@pytest.fixture(autouse=True)
def _fresh_script(llm):
    """A test that fails midway must not leave its scripted replies to the next."""
    llm._queue.clear()
    llm.chunk_delay_s = 0.0
    yield


@pytest.fixture(scope="session")
def browser():
    _require_chromium()
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=10_000)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class PageWatch:
    """Dialogs (alert/confirm) and uncaught script errors seen on a page."""

    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.sent: list[str] = []  # websocket frames the page sent


@pytest.fixture
def watch():
    return PageWatch()


def _new_page(context, live, watch, url=None):
    page = context.new_page()
    page.set_default_timeout(15_000)

    def on_dialog(dialog):
        watch.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("pageerror", lambda exc: watch.errors.append(f"{exc}\n{exc.stack}"))
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: watch.sent.append(payload)))
    page.goto((url or live.url) + "/")
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    return page


def _check(watch):
    assert watch.dialogs == [], f"a dialog opened: {watch.dialogs}"
    assert watch.errors == [], f"script errors on the page: {watch.errors}"


@pytest.fixture(scope="session")
def desktop(browser):
    """One 1280x800 context for the desktop tests (a fresh page, and so a
    fresh websocket session, per test)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    yield context
    context.close()


@pytest.fixture
def page(desktop, live, watch):
    pg = _new_page(desktop, live, watch)
    yield pg
    pg.evaluate("localStorage.clear()")
    pg.close()
    _check(watch)


@pytest.fixture
def open_page(browser, live, watch):
    """Pages in contexts of their own (other sizes, colour schemes, URLs)."""
    contexts = []

    def opener(*, width=1280, height=800, color_scheme="light", url=None, permissions=None):
        context = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme=color_scheme, permissions=permissions or []
        )
        contexts.append(context)
        return _new_page(context, live, watch, url)

    yield opener
    for context in contexts:
        context.close()
    _check(watch)


@pytest.fixture(scope="session")
def shots():
    SCREENSHOTS.mkdir(exist_ok=True)

    def save(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path

    return save


class RestartableApp:
    """An app of its own (toolbox only) whose process can be "restarted": stopped,
    then built afresh from the same settings (same data dir and store) on the same port."""

    def __init__(self, tmp: Path, llm: LLMDouble) -> None:
        write_config(
            tmp / "defaults",
            servers={"toolbox": toolbox_entry(description="Test tools")},
            models=[
                {
                    "name": "double",
                    "model": "openai/double",
                    "api_base": llm.base_url,
                    "api_key_env": "DOUBLE_KEY",
                    "description": "The scripted test model",
                }
            ],
            default_model="double",
            groups={"dev@localhost": ["users"]},
        )
        self.settings = make_settings(tmp)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server: LiveServer | None = None

    def start(self) -> None:
        services = build_services(self.settings, environ={"DOUBLE_KEY": "x", "PATH": "/usr/bin:/bin"})
        self.server = LiveServer(create_app(self.settings, services=services), self.port)
        self.server.start()
        self.server.wait_ready()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


@pytest.fixture
def restartable(tmp_path, llm):
    app = RestartableApp(tmp_path, llm)
    app.start()
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def page_on(browser):
    """Pages on an app of the test's own (`page_on(url)`), in one context; no script errors allowed."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    errors: list[str] = []

    def opener(url):
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/")
        page.get_by_role("status").filter(has_text="Connected").wait_for()
        return page

    yield opener
    context.close()
    assert errors == []
