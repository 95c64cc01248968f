"""The admin console's Audit tab (frontend/static/admin_audit.js) in Chromium against the real
app: an administrator opens the console from the top bar, filters the log to one user's denied
calls, opens a record, and downloads exactly those records."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from playwright.sync_api import expect

from switchboard.services import build_services
from switchboard.store import open_store
from switchboard.store.tokens import TokenStore
from switchboard.web.app import create_app
from tests.browser.conftest import LiveServer
from tests.support.harness import double_model, free_port, make_settings, toolbox_entry, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

pytestmark = pytest.mark.timeout(240)  # four turns, and a server that starts, on a shared machine
TOKENS: dict[str, str] = {}


def _as(email: str) -> dict[str, str]:
    """Requests as `email`: its API token (the page itself is the dev user, root@example.com)."""
    return {"Authorization": f"Bearer {TOKENS[email]}"}


async def _make_tokens(url: str) -> None:
    store = await open_store(url)
    try:
        for email in ("ann@example.com", "bob@example.com"):
            TOKENS[email] = (await TokenStore(store).create(email, "audit test")).secret
    finally:
        await store.close()


@pytest.fixture(scope="module")
def audit_site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("audit-tab")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(approval="always")},
        models=[double_model(llm)],
        default_model="double",
        groups={"*@example.com": ["users"], "root@example.com": ["users", "admin"]},
    )
    port = free_port()
    settings = make_settings(tmp, port=port, dev_user="root@example.com")
    with ThreadPoolExecutor(1) as pool:  # (Playwright's loop runs on this thread)
        pool.submit(asyncio.run, _make_tokens(settings.database_url_resolved)).result()
    server = LiveServer(create_app(settings, services=build_services(settings, environ={"DOUBLE_KEY": "x"})), port)
    server.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = httpx.get(f"{server.url}/readyz", timeout=5)
            if ready.status_code == 200 and ready.json().get("counts", {}).get("starting", 1) == 0:
                break
            time.sleep(0.2)
        yield server
    finally:
        server.stop()


def _turn(server: LiveServer, llm, email: str, text: str, approve: bool) -> None:
    """One turn of `email` (through the HTTP door, with their API token) in which the model calls
    toolbox_echo and the user answers the approval."""
    llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", json.dumps({"text": text}))]), TextReply("ok"))
    with (
        httpx.Client(base_url=server.url, headers=_as(email), timeout=60) as client,
        client.stream("POST", "/api/chat", json={"content": text}) as stream,
    ):
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if event["type"] == "approval_request":
                answer = client.post(f"/api/calls/{event['call_id']}/approval", json={"approved": approve})
                assert answer.status_code == 204
            if event["type"] == "message_done":
                return


def test_an_admin_filters_to_a_users_denied_calls_and_downloads_them(browser, audit_site, llm, watch, tmp_path):
    server = audit_site
    _turn(server, llm, "ann@example.com", "ann one", approve=False)
    _turn(server, llm, "ann@example.com", "ann two", approve=True)
    _turn(server, llm, "bob@example.com", "bob one", approve=False)
    _turn(server, llm, "ann@example.com", "ann three", approve=False)

    context = browser.new_context(viewport={"width": 1280, "height": 900})  # the dev user: root, an admin
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: watch.errors.append(str(exc)))
        page.goto(server.url + "/")
        page.get_by_role("link", name="Admin").click()  # the top bar's link, shown to administrators
        page.get_by_role("tab", name="Audit").click()
        expect(page).to_have_url(server.url + "/admin#audit")
        tab = page.locator("#pane-audit")
        expect(tab.locator(".audit-row").first).to_be_visible()
        assert tab.locator(".audit-row").count() >= 7  # 4 calls, 3 users first seen (and more)

        tab.get_by_label("User").fill("ann@example.com")
        tab.get_by_label("Decision").select_option("deny")
        tab.get_by_role("button", name="Show").click()
        rows = tab.locator(".audit-row")
        expect(rows).to_have_count(2)
        for i in range(2):
            expect(rows.nth(i)).to_contain_text("ann@example.com")
            expect(rows.nth(i)).to_contain_text("toolbox_echo")
            expect(rows.nth(i)).to_contain_text("deny")

        rows.first.click()
        detail = tab.get_by_label("Record")
        expect(detail).to_be_visible()
        expect(detail).to_contain_text('"arguments_sha256"')
        expect(detail).to_contain_text('"conversation_id"')
        expect(detail).not_to_contain_text("ann three")  # the arguments are kept as a hash only

        with page.expect_download() as download_info:
            tab.get_by_role("link", name="Download (JSON lines)").click()
        path = tmp_path / "audit.jsonl"
        assert download_info.value.failure() is None, download_info.value.failure()
        download_info.value.save_as(path)
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(records) == 2
        assert all(r["user"] == "ann@example.com" and r["decision"] == "deny" for r in records)
        assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
        assert watch.errors == []
    finally:
        context.close()

    for path in ("/api/admin/audit", "/api/admin/audit/export"):  # and nobody else may
        assert httpx.get(server.url + path, headers=_as("ann@example.com")).status_code == 403
