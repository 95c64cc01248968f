"""The app's process restarts: the page notices, says so, and is back within seconds of the
server, not after a long backoff."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.support.harness import write_config
from tests.support.serve import ServeProcess

DOWNTIME_S = 8.0  # long enough for a backoff from 1 s to reach 8-16 s between tries
BACK_WITHIN_S = 4.0  # the page's longest wait between tries is 3 s


@pytest.fixture
def served(tmp_path):
    write_config(tmp_path / "defaults", models=[{"name": "demo", "model": "switchboard/demo"}], default_model="demo")
    server = ServeProcess(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


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
