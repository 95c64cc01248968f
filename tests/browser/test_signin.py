"""Connecting one's own account in the page (real Chromium): OAuth sign-in through the
authorization server and back, a tool call on the user's own session, a user-entered token,
and Disconnect."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.browser.helpers import card, send, wait_finished
from tests.integration.test_per_user_sessions import run_signin
from tests.support.harness import free_port, make_settings, write_config


@pytest.fixture
def oauth_url():
    yield from run_signin("--oauth")


@pytest.fixture
def token_url():
    yield from run_signin("--token")


@pytest.fixture
def signin_app(tmp_path, oauth_url, token_url):
    write_config(
        tmp_path / "defaults",
        servers={
            "remote": {"url": oauth_url, "auth": {"type": "oauth"}, "description": "Signs in with OAuth"},
            "keyed": {"url": token_url, "auth": {"type": "user_token"}, "description": "Takes your token"},
            # nothing listens there: its sign-in server is down
            "down": {"url": f"http://127.0.0.1:{free_port()}/mcp", "auth": {"type": "oauth"}, "description": "Is down"},
        },
        models=[{"name": "demo", "model": "switchboard/demo"}],
        default_model="demo",
    )
    port = free_port()
    settings = make_settings(tmp_path, port=port)  # the OAuth redirect URI points at this server
    server = LiveServer(
        create_app(settings, services=build_services(settings, environ={"PATH": "/usr/bin:/bin"})), port
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_connect_and_disconnect_in_the_tools_panel(browser, signin_app):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(signin_app.url + "/")
        panel = page.get_by_role("complementary", name="Tools")
        remote = panel.locator("details.server[data-server=remote]")
        expect(remote).to_have_attribute("data-status", "needs_auth")
        expect(remote.locator(".server-status")).to_have_text("connect")

        # OAuth: Connect -> the authorization server (approves at once) -> back to the page
        remote.get_by_role("link", name="Connect").click()
        page.wait_for_url("**/?connected=remote")
        remote = page.get_by_role("complementary", name="Tools").locator("details.server[data-server=remote]")
        expect(remote.locator(".server-connect")).to_have_attribute("data-connected", "true")
        expect(remote).to_have_attribute("data-status", "ready", timeout=30_000)
        expect(remote.locator(".tool-item", has_text="Whoami")).to_be_visible(timeout=30_000)

        # now the same call runs on this user's own session, with this user's token
        send(page, 'run remote_echo {"text": "hi from the page"}')
        called = card(page, "remote_echo")
        expect(called).to_have_attribute("data-state", "done", timeout=30_000)
        expect(called).to_contain_text("hi from the page")
        wait_finished(page)

        # a user-entered token
        keyed = page.locator("details.server[data-server=keyed]")
        keyed.get_by_label("Your token for keyed").fill("tok-typed-in-page")
        keyed.get_by_role("button", name="Connect").click()
        expect(keyed.locator(".server-connect")).to_have_attribute("data-connected", "true")
        assert "tok-typed-in-page" not in page.content()

        remote.get_by_role("button", name="Disconnect").click()
        expect(remote.locator(".server-connect")).to_have_attribute("data-connected", "false")
        expect(remote).to_have_attribute("data-status", "needs_auth")
        assert errors == []
    finally:
        context.close()


@pytest.mark.timeout(180)
def test_connect_to_a_server_that_is_down_comes_back_with_a_notice(browser, signin_app):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(signin_app.url + "/")
        down = page.get_by_role("complementary", name="Tools").locator("details.server[data-server=down]")
        down.get_by_role("link", name="Connect").click()
        page.wait_for_url(signin_app.url + "/")  # back on the chat page, the notice's token gone from the address
        notice = page.get_by_role("alert").filter(has_text="Could not connect 'down'")
        expect(notice).to_contain_text("could not be reached (it may be down)")
        assert "{" not in notice.inner_text()  # words, not a raw JSON error
        notice.get_by_role("button", name="Dismiss").click()
        expect(notice).to_have_count(0)
        page.reload()
        expect(page.locator("#signin-notice")).to_have_count(0)  # said once
    finally:
        context.close()


@pytest.mark.timeout(180)
def test_a_refused_token_says_refused_and_keeps_the_field(browser, signin_app):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(signin_app.url + "/")
        keyed = page.get_by_role("complementary", name="Tools").locator("details.server[data-server=keyed]")
        field = keyed.get_by_label("Your token for keyed")
        field.fill("wrong-token")  # the server takes only tokens that start with tok-
        keyed.get_by_role("button", name="Connect").click()
        expect(keyed.locator(".connect-note")).to_contain_text("Refused:", timeout=30_000)
        expect(keyed.locator(".connect-note")).to_contain_text("401")
        expect(field).to_have_value("wrong-token")  # kept, to correct it
        expect(keyed).not_to_contain_text("Connected")
        page.reload()
        keyed = page.get_by_role("complementary", name="Tools").locator("details.server[data-server=keyed]")
        expect(keyed.locator(".server-connect")).to_have_attribute("data-connected", "false")
        expect(keyed.get_by_label("Your token for keyed")).to_be_visible()
    finally:
        context.close()
