"""A server with 300 tools: the tools panel stays short (a big server starts collapsed, with its
count), and a filter finds tools by name or description."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import free_port, make_settings, toolbox_entry, write_config

MANY = Path(__file__).resolve().parents[1] / "support" / "servers" / "many_tools.py"


@pytest.fixture(scope="module")
def big_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("big-catalogue")
    write_config(
        tmp / "defaults", servers={"many": {"command": "python", "args": [str(MANY)]}, "toolbox": toolbox_entry()}
    )
    settings = make_settings(tmp)
    server = LiveServer(create_app(settings, services=build_services(settings, environ={})), free_port())
    server.start()
    try:
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.url}/readyz", timeout=5).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


def _panel_height(page) -> int:
    return page.locator("#tools-panel").evaluate("panel => panel.scrollHeight")


def test_a_server_with_300_tools_is_collapsed_and_its_tools_can_be_filtered(browser, big_site, watch, shots):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(big_site.url + "/")
        many = page.locator('details.server[data-server="many"]')
        expect(many).to_have_attribute("data-status", "ready")
        expect(page.locator("#tools-summary")).to_contain_text("of 3")  # 300 + the toolbox's tools
        height = _panel_height(page)
        print(f"tools panel with 300 tools: {height} px tall")
        assert height < 1500, f"the tools panel is {height} px tall"
        expect(many).not_to_have_attribute("open", "")
        expect(many.locator(".tool-count")).to_have_text("300 tools")
        expect(page.locator('details.server[data-server="toolbox"] .tool-count')).to_have_text("15 tools")
        toolbox = page.locator('details.server[data-server="toolbox"]')
        expect(toolbox).to_have_attribute("open", "")  # a server of up to 20 tools stays open

        search = page.get_by_role("searchbox", name="Filter tools")
        search.fill("invoice")
        shown = many.locator(".tool-item:visible")
        expect(shown).to_have_count(30)
        expect(many).to_have_attribute("open", "")
        expect(toolbox).to_be_hidden()
        expect(page.locator("#tools-filter-note")).to_contain_text("30 tools match")
        print(f"filtered to 'invoice': {_panel_height(page)} px tall")
        shots(page, "30-tools-filtered")
        # Descriptions count too; several words must all match.
        search.fill("back office archive")
        expect(shown).to_have_count(10)
        search.fill("echo")
        expect(toolbox).to_be_visible()
        expect(toolbox.locator(".tool-item:visible")).to_have_count(1)
        expect(many).to_be_hidden()
        search.fill("no such tool anywhere")
        expect(page.locator("#tools-filter-note")).to_contain_text("No tool matches")

        search.fill("")
        expect(many).to_be_visible()
        expect(many).not_to_have_attribute("open", "")  # opened only for the filter
        expect(many.locator(".tool-item:visible")).to_have_count(0)
        assert _panel_height(page) < 1500
    finally:
        context.close()
    assert watch.errors == []
