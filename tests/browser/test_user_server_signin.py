"""The "Add server" dialog with a server that asks for an OAuth sign-in (real Chromium, the real
OAuth test server on 127.0.0.1): adding it shows the sign-in step, Sign in goes through the
authorization server and back, and then its tools wait for approval in the dialog."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.user_server_rows import internal_name
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.integration.test_per_user_sessions import run_signin
from tests.support.harness import free_port, make_settings, write_config

pytestmark = pytest.mark.timeout(240)
ALICE = "alice@example.com"  # the page's (dev) user


@pytest.fixture
def site(tmp_path):
    write_config(
        tmp_path / "defaults",
        servers={},
        models=[{"name": "demo", "model": "switchboard/demo"}],
        default_model="demo",
        groups={"*@example.com": ["users"]},
    )
    port = free_port()
    settings = make_settings(tmp_path, port=port, dev_user=ALICE, user_server_hosts=["127.0.0.1"])
    server = LiveServer(
        create_app(settings, services=build_services(settings, environ={"PATH": "/usr/bin:/bin"})), port
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def oauth_url():
    yield from run_signin("--oauth")


def test_adding_a_server_that_asks_for_sign_in_shows_the_step_and_sign_in_completes_it(browser, site, oauth_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    try:
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(site.url + "/")
        page.get_by_role("button", name="Add server").click()
        dialog = page.get_by_role("dialog", name="Your servers")
        dialog.get_by_label("Name").fill("notes")
        dialog.get_by_label("URL").fill(oauth_url)
        dialog.get_by_role("button", name="Add", exact=True).click()
        expect(dialog.get_by_role("status")).to_contain_text("asks you to sign in")
        block = dialog.locator('.user-server[data-server="notes"]')
        expect(block).to_contain_text("needs_auth")
        sign_in = block.get_by_role("link", name="Sign in")
        expect(sign_in).to_have_attribute("href", f"{site.url}/api/servers/{internal_name('notes', ALICE)}/connect")

        sign_in.click()  # -> the authorization server (it approves at once) -> back to the page
        page.wait_for_url(f"**/?connected={internal_name('notes', ALICE)}")
        page.get_by_role("button", name="Add server").click()
        block = page.get_by_role("dialog", name="Your servers").locator('.user-server[data-server="notes"]')
        whoami = block.locator('li[data-tool="whoami"]')
        expect(whoami).to_have_attribute("data-state", "pending", timeout=60_000)
        expect(block.get_by_role("link", name="Sign in")).to_have_count(0)
        whoami.get_by_role("button", name="Approve").click()
        expect(whoami).to_have_attribute("data-state", "approved")
        assert errors == []
    finally:
        context.close()
