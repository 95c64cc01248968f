"""The connection drops (a real cut between browser and app) and comes back."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.helpers import card, last_answer, send, wait_finished
from tests.browser.netproxy import TcpProxy
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def test_a_dropped_connection_is_shown_and_the_page_recovers(open_page, live, llm, shots):
    proxy = TcpProxy(live.port)
    proxy.start()
    try:
        page = open_page(url=proxy.url)
        conn = page.locator("#conn")
        send_button = page.get_by_role("button", name="Send")

        # A turn is running when the line goes down.
        llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 20, "delay_s": 0.3}')]), TextReply("Counted."))
        send(page, "count for a while")
        expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "running")
        proxy.cut()
        expect(conn).to_have_attribute("data-state", "reconnecting")
        expect(conn).to_contain_text("Reconnecting")
        expect(last_answer(page).locator(".finish-note")).to_contain_text("connection was lost")
        expect(card(page, "toolbox_slow").locator(".tool-status")).to_have_text("Connection lost")
        expect(send_button).to_be_disabled()
        expect(page.locator("#composer-hint")).to_contain_text("Not connected")
        shots(page, "13-reconnecting")

        # It reconnects by itself once the network is back, and fetches the
        # models and servers again (they may have changed meanwhile).
        page.wait_for_timeout(1200)
        with page.expect_request(lambda r: "/api/config" in r.url, timeout=20_000):
            proxy.restore()
            expect(conn).to_have_attribute("data-state", "connected", timeout=20_000)
        expect(page.locator(".notice")).to_contain_text("Reconnected")
        # The turn went on on the server: the page joins it again and sees it finish.
        expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "done", timeout=15_000)
        expect(wait_finished(page)).to_contain_text("Counted.")
        page.get_by_role("textbox", name="Message").fill("hello again")
        expect(send_button).to_be_enabled()

        # A second outage: "Retry now" skips the wait.
        proxy.cut()
        retry = page.get_by_role("button", name="Retry now")
        expect(retry).to_be_visible()
        proxy.restore()
        retry.click()
        expect(conn).to_have_attribute("data-state", "connected", timeout=5_000)

        llm.enqueue(TextReply("still here"))
        send(page, "hello again")
        expect(wait_finished(page)).to_contain_text("still here")
    finally:
        proxy.cut()
