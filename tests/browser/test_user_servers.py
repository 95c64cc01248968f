"""The tools panel's "Add server" dialog (frontend/static/user_servers.js) in Chromium against the
real app: a user adds a real streamable-HTTP MCP server on 127.0.0.1, approves one tool, and the
model calls it in a chat; another user never sees it."""

from __future__ import annotations

import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.store import open_store
from switchboard.store.tokens import TokenStore
from switchboard.tools.naming import qualify
from switchboard.user_server_rows import internal_name
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import double_model, free_port, make_settings, run_toolbox_server, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

pytestmark = pytest.mark.timeout(240)
ALICE = "alice@example.com"  # the page's (dev) user
TOKENS: dict[str, str] = {}


async def _make_token(url: str) -> None:
    store = await open_store(url)
    try:
        TOKENS["bob"] = (await TokenStore(store).create("bob@example.com", "user servers test")).secret
    finally:
        await store.close()


@pytest.fixture
def site(tmp_path, llm):
    write_config(
        tmp_path / "defaults",
        servers={},
        models=[double_model(llm)],
        default_model="double",
        groups={"*@example.com": ["users"]},
    )
    port = free_port()
    settings = make_settings(tmp_path, port=port, dev_user=ALICE, user_server_hosts=["127.0.0.1"])
    with ThreadPoolExecutor(1) as pool:  # (Playwright's loop runs on this thread)
        pool.submit(asyncio.run, _make_token(settings.database_url_resolved)).result()
    server = LiveServer(create_app(settings, services=build_services(settings, environ={"DOUBLE_KEY": "x"})), port)
    server.start()
    try:
        deadline = time.monotonic() + 60
        while httpx.get(f"{server.url}/readyz", timeout=5).status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        yield server
    finally:
        server.stop()


def test_a_user_adds_a_server_approves_a_tool_and_uses_it_and_nobody_else_sees_it(browser, site, llm, watch):
    with run_toolbox_server("http") as url:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
            page.goto(site.url + "/")
            page.get_by_role("button", name="Add server").click()
            dialog = page.get_by_role("dialog", name="Your servers")
            dialog.get_by_label("Name").fill("mine")
            dialog.get_by_label("URL").fill(url)
            dialog.get_by_label("Transport").select_option("http")
            dialog.get_by_label("Headers, one per line").fill("X-Token: sealed-4711")
            dialog.get_by_role("button", name="Add", exact=True).click()
            echo = dialog.locator('.user-server[data-server="mine"] li[data-tool="echo"]')
            expect(echo).to_have_attribute("data-state", "pending")
            expect(echo.locator(".tool-pin")).to_have_text(re.compile(r"^[0-9a-f]{12}$"))
            echo.get_by_role("button", name="Approve").click()
            expect(echo).to_have_attribute("data-state", "approved")
            expect(echo.get_by_role("button", name="Approve")).to_have_count(0)
            assert "sealed-4711" not in dialog.inner_text()
            dialog.get_by_role("button", name="Close").click()

            server = internal_name("mine", ALICE)
            tool = qualify(server, "echo", set())
            expect(page.locator(f'input[data-tool="{tool}"]')).to_have_count(1)  # offered in the tools panel
            llm.enqueue(ToolCallReply([ToolCall(tool, json.dumps({"text": "from my own server"}))]), TextReply("done"))
            page.get_by_role("textbox", name="Message").fill("use my server")
            page.get_by_role("button", name="Send").click()
            expect(page.get_by_text("done", exact=True)).to_be_visible()
            results = [m for m in llm.requests[-1]["messages"] if m.get("role") == "tool"]
            assert results and "from my own server" in json.dumps(results)

            bob = {"Authorization": f"Bearer {TOKENS['bob']}"}
            seen = httpx.get(f"{site.url}/api/config", headers=bob).json()
            assert server not in {s["name"] for s in seen["servers"]}
            assert all(t["name"] != tool for t in seen.get("tools", []))
            assert httpx.get(f"{site.url}/api/servers", headers=bob).json() == {"servers": []}
        finally:
            context.close()
    assert watch.errors == []
