"""MCP Apps in real Chromium against real app servers: the reference servers from npm
(`server-basic-vanillajs`, `server-pdf`, over stdio with npx) and a hostile app of our own
(tests/support/servers/hostile_app.py). Two users sign in through the proxy headers."""

from __future__ import annotations

import json
import os
import re
import shutil
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from switchboard.services import build_services
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.browser.helpers import card, send
from tests.support.harness import free_port, make_settings, toolbox_entry, write_config
from tests.support.pdf import build_pdf

HOSTILE = Path(__file__).resolve().parents[1] / "support" / "servers" / "hostile_app.py"
SECRET = "apps-test-secret"
ALICE, BOB = "alice@example.com", "bob@example.com"
NPX_ENV = {"PATH": "${PATH}", "HOME": "${HOME}", "npm_config_prefer_offline": "true"}
ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
PDF_TEXT = "Switchboard renders apps"
pytestmark = pytest.mark.timeout(240)  # npx servers, a restart of the host


class AppsSite:
    """The app with the app servers; `restart()` builds it afresh on the same port and store."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.wiped = tmp / "wiped"
        self.pdf = tmp / "apps-test.pdf"
        self.pdf.write_bytes(build_pdf([PDF_TEXT]))
        write_config(
            tmp / "defaults",
            servers={
                "basic": {
                    "command": "npx",
                    "args": ["-y", "--silent", "@modelcontextprotocol/server-basic-vanillajs", "--stdio"],
                    "env": NPX_ENV,
                    "approval": "never",
                    "timeout_s": 60,
                },
                "pdf": {
                    "command": "npx",
                    "args": ["-y", "--silent", "@modelcontextprotocol/server-pdf", "--stdio", str(self.pdf)],
                    "env": NPX_ENV,
                    "approval": "never",
                    "timeout_s": 60,
                },
                "hostile": {
                    "command": "python",
                    "args": [str(HOSTILE)],
                    "env": {"HOSTILE_WIPED": str(self.wiped)},
                    "tools": {"deny": ["forbidden_tool"]},
                },
                "twin": {"command": "python", "args": [str(HOSTILE)], "env": {"HOSTILE_WIPED": str(self.wiped)}},
                "toolbox": toolbox_entry(),
                "dataviz": {"command": "python", "args": ["main.py"], "cwd": "backend/mcp/dataviz"},
            },
            models=[{"name": "demo", "model": "switchboard/demo", "description": "Offline demo model"}],
            default_model="demo",
            groups={ALICE: ["users"], BOB: ["users"]},
        )
        self.settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server: LiveServer | None = None

    def start(self) -> None:
        environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(self.tmp))}
        app = create_app(self.settings, services=build_services(self.settings, environ=environ))
        self.server = LiveServer(SignInProxy(app), self.port)
        self.server.start()
        self.server.wait_ready(timeout=180)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_events(self, name: str) -> list[dict]:
        lines = (self.tmp / "logs" / "app.jsonl").read_text().splitlines()
        return [e for e in map(json.loads, lines) if e.get("event") == name]


USER_COOKIE = "test_signed_in_as"


class SignInProxy:
    """What the sign-in proxy in front of the app does: it vouches for the user on every request,
    the websocket's handshake included. (Chromium does not add a context's extra HTTP headers to
    a websocket handshake, so the page's user also rides in a cookie, which it does send.)"""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = list(scope["headers"])
            cookies = SimpleCookie(b"; ".join(v for k, v in headers if k == b"cookie").decode("latin-1"))
            if USER_COOKIE in cookies and not any(k == b"x-user-email" for k, _ in headers):
                email = cookies[USER_COOKIE].value.encode()
                scope = {**scope, "headers": [*headers, (b"x-user-email", email), (b"x-proxy-secret", SECRET.encode())]}
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    if shutil.which("npx") is None:
        pytest.fail("npx is not installed (scripts/test installs Node.js)", pytrace=False)
    app = AppsSite(tmp_path_factory.mktemp("apps"))
    app.start()
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture
def user_page(browser, site, watch):
    """`user_page(email, width=..., height=...)`: a page signed in as that user (proxy headers)."""
    contexts = []

    def make(
        email: str = ALICE, *, width: int = 1280, height: int = 800, path: str = "/", color_scheme: str = "light"
    ) -> Page:
        context = browser.new_context(
            viewport={"width": width, "height": height},
            color_scheme=color_scheme,
            extra_http_headers={"X-User-Email": email, "X-Proxy-Secret": SECRET},
        )
        context.add_cookies([{"name": USER_COOKIE, "value": email, "url": site.url}])
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.on("console", lambda message: watch.sent.append(message.text))
        page.goto(site.url + path)
        page.get_by_role("status").filter(has_text="Connected").wait_for()
        return page

    yield make
    for context in contexts:
        context.close()
    assert watch.errors == [], watch.errors


def app_frame(page: Page, index: int = -1):
    """The app's own document: inside the sandbox proxy's inner frame."""
    shells = page.locator(".canvas-view:not([hidden]) iframe.app-frame")
    return (shells.nth(index) if index >= 0 else shells.last).content_frame.locator("iframe").content_frame


def finished(page: Page) -> None:
    expect(page.locator(".msg.assistant").last).to_have_attribute("data-finish", "stop", timeout=60_000)


def run_app_tool(page: Page, text: str, tool: str):
    send(page, text)
    finished(page)
    expect(card(page, tool).get_by_role("button", name="Open app")).to_be_visible()
    return card(page, tool)


def test_basic_app_shows_the_server_time_and_calls_its_server(user_page):
    page = user_page()
    run_app_tool(page, "basic_get-time", "basic_get-time")
    app = app_frame(page)
    time = app.locator("#server-time")
    expect(time).to_have_text(ISO_TIME, timeout=30_000)
    first = time.text_content()
    page.wait_for_timeout(5)
    app.get_by_role("button", name="Get Server Time").click()
    expect(time).not_to_have_text(first)
    expect(time).to_have_text(ISO_TIME)


def test_basic_app_asks_before_sending_a_message_or_opening_a_link(user_page, site):
    page = user_page()
    run_app_tool(page, "basic_get-time", "basic_get-time")
    app = app_frame(page)
    expect(app.locator("#server-time")).to_have_text(ISO_TIME, timeout=30_000)
    users_before = page.locator(".msg.user").count()

    app.get_by_role("button", name="Send Message").click()
    dialog = page.get_by_role("dialog", name="Send a message?")
    expect(dialog).to_contain_text("This is message text.")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert page.locator(".msg.user").count() == users_before  # refused: nothing sent

    app.get_by_role("button", name="Send Message").click()
    page.get_by_role("dialog", name="Send a message?").get_by_role("button", name="Send message").click()
    expect(page.locator(".msg.user").last).to_contain_text("This is message text.")
    finished(page)

    app.get_by_role("button", name="Open Link").click()
    dialog = page.get_by_role("dialog", name="Open a link?")
    expect(dialog).to_contain_text("https://modelcontextprotocol.io/")
    dialog.get_by_role("button", name="Cancel").click()
    assert len(page.context.pages) == 1  # no tab opened without the user's yes
    page.context.route(
        "https://modelcontextprotocol.io/**", lambda route: route.fulfill(body="opened", content_type="text/plain")
    )
    app.get_by_role("button", name="Open Link").click()
    with page.context.expect_page() as opened:
        page.get_by_role("dialog", name="Open a link?").get_by_role("button", name="Open link").click()
    assert opened.value.url == "https://modelcontextprotocol.io/"


def test_pdf_server_shows_a_pdf_in_its_viewer(user_page, site):
    page = user_page()
    run_app_tool(page, f'pdf_display_pdf {{"url": "{site.pdf}"}}', "pdf_display_pdf")
    viewer = app_frame(page)
    expect(viewer.get_by_text(PDF_TEXT).first).to_be_attached(timeout=60_000)  # PDF.js's text layer
    expect(viewer.locator("canvas").first).to_be_visible()


def test_the_bundled_chart_app_switches_series_through_its_server(user_page):
    page = user_page()
    csv = "month,signups,visits\\n1,2,30\\n2,4,50\\n3,6,70"
    run_app_tool(
        page, f'dataviz_chart_csv {{"csv_text": "{csv}", "y": "signups", "title": "Growth"}}', "dataviz_chart_csv"
    )
    chart = app_frame(page)
    expect(chart.locator("#title")).to_have_text("Growth", timeout=30_000)
    expect(chart.locator("#series")).to_contain_text("signups")
    chart.locator("#add").select_option("visits")  # the app-only chart_series, through the host
    expect(chart.locator("#series")).to_contain_text("visits")
    expect(chart.locator("#svg path, #svg rect, #svg circle").first).to_be_attached()


def hostile_results(app) -> dict[str, dict]:
    lines = app.locator("#results").text_content().strip().splitlines()
    return {entry["name"]: entry for entry in map(json.loads, lines)}


def test_hostile_app_is_refused_everything(user_page, site):
    page = user_page()
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text))
    run_app_tool(page, f'hostile_hostile_open {{"page": "{site.url}"}}', "hostile_hostile_open")
    app = app_frame(page)
    expect(app.locator("#state")).to_have_text("waiting for approval", timeout=30_000)
    # The app asks for a tool that needs approval: the user is asked on the app, says no, and it never runs.
    approval = page.locator(".app-notices form.approval").filter(has_text="wipe").last
    approval.get_by_role("button", name="Deny").click()
    expect(app.locator("#state")).to_have_text("done")
    results = hostile_results(app)
    allowed = results.pop("own app-only tool (allowed)")
    assert not allowed["refused"], allowed
    expected = {
        "parent.document",
        "top.document",
        "document.cookie",
        "localStorage",
        "sessionStorage",
        "fetch page api",
        "post page api",
        "fetch undeclared origin",
        "fetch sandbox origin",
        "other server's tool (bare)",
        "other server's tool (qualified)",
        "forbidden tool",
        "other server's app-only tool",
        "duplicate id",
        "top navigation",
        "popup",
        "flood",
        "tool that needs approval",
    }
    assert set(results) == expected
    assert [r for r in results.values() if not r["refused"]] == []
    assert not site.wiped.exists()
    assert page.url.startswith(site.url) and len(page.context.pages) == 1
    # Refusals are logged: the page's bridge, the browser's CSP reports on the server.
    logged = "\n".join(seen)
    for what in (
        "ignored a message from a frame that is not an app's",
        "forged id",
        "id already in use",
        "rate limit",
        "malformed message",
    ):
        assert what in logged, what
    blocked = {e["uri"] for e in site.log_events("app_csp_violation")}
    assert "https://undeclared.example/steal" in blocked
    assert f"{site.url}/api/config" in blocked


def test_apps_mount_again_after_a_reload_a_reconnect_and_a_restart(user_page, site):
    page = user_page()
    run_app_tool(page, "basic_get-time", "basic_get-time")
    time = app_frame(page).locator("#server-time")
    expect(time).to_have_text(ISO_TIME, timeout=30_000)
    stored = time.text_content()
    page.reload()
    expect(app_frame(page).locator("#server-time")).to_have_text(stored, timeout=30_000)  # the stored result
    conversation = page.url
    site.restart()
    # A reconnect: the page reloads the conversation; the app stays mounted and reaches the new server.
    for _ in range(30):  # the backoff may have grown while the host was down: "Retry now"
        if page.locator("#conn[data-state=connected]").count():
            break
        if page.locator("#conn-retry").is_visible():
            page.locator("#conn-retry").click()
        page.wait_for_timeout(1000)
    expect(page.locator("#conn[data-state=connected]")).to_be_attached()
    expect(page.get_by_text("Reconnected.")).to_be_visible()
    time = app_frame(page).locator("#server-time")
    app_frame(page).get_by_role("button", name="Get Server Time").click()
    expect(time).not_to_have_text(stored)
    expect(time).to_have_text(ISO_TIME)
    page.goto(conversation)
    expect(app_frame(page).locator("#server-time")).to_have_text(stored, timeout=60_000)
    page.get_by_role("button", name=re.compile("Close get-time")).click()
    expect(page.locator("iframe.app-frame")).to_have_count(0)
    card(page, "basic_get-time").get_by_role("button", name="Open app").click()
    expect(app_frame(page).locator("#server-time")).to_have_text(stored)


def test_two_apps_in_one_conversation_and_teardown(user_page):
    page = user_page()
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text))
    run_app_tool(page, "basic_get-time", "basic_get-time")
    run_app_tool(page, "basic_get-time", "basic_get-time")
    expect(page.locator(".canvas-tab[data-kind=app]")).to_have_count(2)
    expect(app_frame(page).locator("#server-time")).to_have_text(ISO_TIME, timeout=30_000)
    page.locator(".canvas-tab[data-kind=app]").first.click()
    expect(app_frame(page).locator("#server-time")).to_have_text(ISO_TIME, timeout=30_000)
    expect(page.locator("iframe.app-frame")).to_have_count(2)
    page.get_by_role("button", name=re.compile("Close get-time")).first.click()
    expect(page.locator("iframe.app-frame")).to_have_count(1)
    assert any("App is being torn down" in line for line in seen)  # ui/resource-teardown reached it first
    page.get_by_role("button", name="New chat").first.click()
    expect(page.locator("iframe.app-frame")).to_have_count(0)


def test_display_modes_and_the_phone_layout(user_page):
    page = user_page()
    run_app_tool(page, "basic_get-time", "basic_get-time")
    expect(app_frame(page).locator("#server-time")).to_have_text(ISO_TIME, timeout=30_000)
    page.get_by_role("button", name="Full screen").click()
    box = page.locator(".app-shell").bounding_box()
    assert box["width"] == 1280 and box["height"] == 800
    page.get_by_role("button", name="Picture in picture").click()
    box = page.locator(".app-shell").bounding_box()
    assert box["width"] < 400 and box["x"] > 800
    page.get_by_role("button", name="In canvas").click()

    phone = user_page(width=390, height=844)
    run_app_tool(phone, "basic_get-time", "basic_get-time")
    expect(phone.locator("#canvas")).to_be_hidden()  # a phone's canvas opens when asked
    card(phone, "basic_get-time").get_by_role("button", name="Open app").click()
    expect(app_frame(phone).locator("#server-time")).to_have_text(ISO_TIME, timeout=30_000)
    expect(phone.get_by_role("button", name="Picture in picture")).to_have_count(0)
    assert phone.locator(".app-shell").bounding_box()["width"] <= 390


def test_the_apps_theme_follows_the_page(user_page):
    page = user_page(color_scheme="dark")
    run_app_tool(page, "basic_get-time", "basic_get-time")
    root = app_frame(page).locator("html")
    expect(root).to_have_attribute("data-theme", "dark", timeout=30_000)  # ui/initialize's hostContext
    page.emulate_media(color_scheme="light")
    expect(root).to_have_attribute("data-theme", "light")  # ui/notifications/host-context-changed


def test_two_users_never_see_each_others_apps(user_page, site):
    alice = user_page(ALICE)
    tool_card = run_app_tool(alice, "basic_get-time", "basic_get-time")
    call_id = tool_card.get_attribute("data-call-id")
    conversation = alice.url
    assert (
        httpx.get(
            f"{site.url}/api/apps/{call_id}", headers={"X-User-Email": ALICE, "X-Proxy-Secret": SECRET}
        ).status_code
        == 200
    )
    bob = user_page(BOB)
    status = bob.evaluate("async (id) => (await fetch(`/api/apps/${encodeURIComponent(id)}`)).status", call_id)
    assert status == 404
    bob.goto(conversation)
    expect(bob.get_by_role("alert").filter(has_text="not found")).to_be_visible()
    expect(bob.locator("iframe.app-frame")).to_have_count(0)
