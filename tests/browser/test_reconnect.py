"""The app's process restarts: the page notices, says so, and is back within seconds of the
server, not after a long backoff."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.support.harness import free_port, write_config

DOWNTIME_S = 8.0  # long enough for a backoff from 1 s to reach 8-16 s between tries
BACK_WITHIN_S = 4.0  # the page's longest wait between tries is 3 s


class ServeProcess:
    """`switchboard serve` as its own process, stopped and started again on the same port."""

    def __init__(self, tmp) -> None:
        write_config(tmp / "defaults", models=[{"name": "demo", "model": "switchboard/demo"}], default_model="demo")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "SWITCHBOARD_DEFAULTS_DIR": str(tmp / "defaults"),
                    "SWITCHBOARD_CONFIG_DIR": str(tmp / "overrides"), "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
                    "SWITCHBOARD_LOG_DIR": str(tmp / "logs")}  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> float:
        """Start, and return the moment the app has loaded (/healthz without `"app": "loading"`)."""
        self.proc = subprocess.Popen([sys.executable, "-m", "switchboard", "serve", "--port", str(self.port)],
                                     env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "switchboard serve exited"
            try:
                health = httpx.get(f"{self.url}/healthz", timeout=1)
                if health.status_code == 200 and "app" not in health.json():
                    return time.monotonic()
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("switchboard serve did not answer")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


@pytest.fixture
def served(tmp_path):
    server = ServeProcess(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def page_on(browser):
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


@pytest.mark.timeout(180)  # two start-ups of the whole app on a busy machine
def test_the_page_is_back_within_seconds_of_a_restarted_server(page_on, served):
    page = page_on(served.url)
    conn = page.locator("#conn")
    served.stop()
    expect(conn).to_have_attribute("data-state", "reconnecting")
    # While the server is away the page says so, and never waits long between tries.
    longest = 0
    deadline = time.monotonic() + DOWNTIME_S
    while time.monotonic() < deadline:
        found = re.search(r"Reconnecting in (\d+) s", page.locator("#conn-text").inner_text())
        longest = max(longest, int(found.group(1)) if found else 0)
        page.wait_for_timeout(100)
    assert 0 < longest <= 3, f"the page waited up to {longest} s between tries"
    expect(conn).to_contain_text("attempt")

    back = served.start()
    expect(conn).to_have_attribute("data-state", "connected", timeout=20_000)
    took = time.monotonic() - back
    assert took <= BACK_WITHIN_S, f"the page came back {took:.1f} s after the server"
