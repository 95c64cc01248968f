"""A user past SWITCHBOARD_MAX_SOCKETS_PER_USER: the extra tab says why it does not connect,
and connects once another tab is closed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.support.harness import write_config
from tests.support.serve import ServeProcess


@pytest.fixture
def served(tmp_path):
    write_config(tmp_path / "defaults", models=[{"name": "demo", "model": "switchboard/demo"}], default_model="demo")
    server = ServeProcess(tmp_path, {"SWITCHBOARD_MAX_SOCKETS_PER_USER": "1"})
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.timeout(120)
def test_a_tab_past_the_socket_limit_says_why_and_connects_when_another_closes(page_on, served, shots):
    first = page_on(served.url)
    second = first.context.new_page()
    second.goto(served.url + "/")
    conn = second.locator("#conn")
    expect(conn).to_have_attribute("data-state", "reconnecting")
    hint = second.locator("#composer-hint")
    expect(hint).to_contain_text(
        "Not connected: the server says you have 1 Switchboard tabs or connections open, "
        "the most allowed; close one of them and try again.",
        timeout=20_000,
    )
    shots(second, "socket-limit")
    first.close()
    expect(conn).to_have_attribute("data-state", "connected", timeout=20_000)
    expect(second.locator("#conn-text")).to_have_text("Connected")
    expect(hint).not_to_contain_text("Not connected")
