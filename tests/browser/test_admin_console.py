"""The admin console (/admin) in Chromium: an administrator adds a real stdio server through the
form (checked live first) and sees it ready; a user who is not one gets the 403 page and no link;
the page works on a phone-sized screen."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import TOOLBOX, free_port, make_settings, toolbox_entry, write_config

SECRET = "console-browser-secret"
ADMIN = {"x-user-email": "root@example.com", "x-proxy-secret": SECRET}
BOB = {"x-user-email": "bob@example.com", "x-proxy-secret": SECRET}


@pytest.fixture(scope="module")
def console_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("admin-console")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry()},
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET)
    server = LiveServer(create_app(settings, services=build_services(settings, environ={})), free_port())
    server.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if httpx.get(f"{server.url}/readyz", timeout=5).status_code == 200:
                break
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


def _page(browser, headers, watch, *, width=1280, height=800):
    context = browser.new_context(viewport={"width": width, "height": height}, extra_http_headers=headers)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
    page.on("dialog", lambda dialog: dialog.accept())
    return context, page


def test_an_administrator_adds_a_server_and_sees_it_ready(browser, console_site, watch):
    context, page = _page(browser, ADMIN, watch)
    try:
        page.goto(console_site.url + "/")
        page.locator("#admin-link").click()
        expect(page).to_have_url(console_site.url + "/admin#servers")
        expect(page.locator('.server-card[data-name="toolbox"]')).to_have_attribute("data-status", "ready")
        page.get_by_role("button", name="Add a server").click()
        page.get_by_label("Name").fill("added")
        page.get_by_label("Command (a local server)").fill("python")
        page.get_by_label("Arguments, one a line").fill(str(TOOLBOX))
        page.get_by_label("Description").fill("added in the console")
        page.get_by_role("button", name="Check", exact=True).click()
        expect(page.locator(".check-result")).to_contain_text("Connected:", timeout=60_000)  # a process starts
        expect(page.locator(".check-result")).to_contain_text("echo")
        page.get_by_role("button", name="Check and save").click()
        added = page.locator('.server-card[data-name="added"]')
        expect(added).to_have_attribute("data-status", "ready", timeout=60_000)
        expect(added).to_contain_text("admin")
        expect(added).to_contain_text("review")
        expect(added).to_contain_text("added in the console")
        # The users who came by are listed, with where their groups come from.
        page.get_by_role("tab", name="Users").click()
        root = page.locator('.user-card[data-email="root@example.com"]')
        expect(root).to_contain_text("admin (groups.yml)")
        # Removed again: it goes from the list (and from the servers that run).
        page.get_by_role("tab", name="Servers").click()
        added.get_by_role("button", name="Remove added").click()
        expect(added).to_have_count(0)
        assert watch.errors == []
    finally:
        context.close()


def test_a_user_who_is_not_an_administrator_gets_403_and_no_link(browser, console_site, watch):
    context, page = _page(browser, BOB, watch)
    try:
        answer = page.goto(console_site.url + "/admin")
        assert answer is not None and answer.status == 403
        expect(page.get_by_role("alert")).to_contain_text("This page is for administrators")
        page.goto(console_site.url + "/")
        expect(page.get_by_role("banner")).to_contain_text("Switchboard")  # the chat page and its top bar
        expect(page.locator("#admin-link")).to_have_count(0)
    finally:
        context.close()


def test_the_console_works_on_a_phone(browser, console_site, watch):
    context, page = _page(browser, ADMIN, watch, width=375, height=740)
    try:
        page.goto(console_site.url + "/admin")
        card = page.locator('.server-card[data-name="toolbox"]')
        expect(card).to_have_attribute("data-status", "ready")
        for tab in ("Servers", "Tools", "Users", "Audit"):
            expect(page.get_by_role("tab", name=tab)).to_be_visible()
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth"), "no sideways scrolling"
        box = card.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
        restart = card.get_by_role("button", name="Restart toolbox")
        expect(restart).to_be_visible()
        page.get_by_role("tab", name="Users").click()
        expect(page.locator('.user-card[data-email="root@example.com"]')).to_be_visible()
        assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
        page.get_by_role("tab", name="Audit").click()
        expect(page.locator("#pane-audit")).to_contain_text("The audit log is not available")
        assert watch.errors == []
    finally:
        context.close()
