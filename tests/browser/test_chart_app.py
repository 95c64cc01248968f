"""The bundled chart app (dataviz, an MCP App) and the page's app bridge in real Chromium: the
chart's geometry, a failed call, the canvas tabs' names, and what the bridge does with an
app's size changes and cancelled requests."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.browser.helpers import card, send, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

CSV = "month,signups,visits\n1,2,30\n2,4,50\n3,6,70\n"


def chart(page: Page, llm, **arguments) -> None:
    """One turn that calls dataviz_chart_csv with `arguments` (and the CSV), its app tab shown."""
    llm.enqueue(
        ToolCallReply([ToolCall("dataviz_chart_csv", json.dumps({"csv_text": CSV, **arguments}))]), TextReply("ok")
    )
    send(page, "chart it")
    wait_finished(page)
    expect(card(page, "dataviz_chart_csv").get_by_role("button", name="Open app")).to_be_visible()


def app_frame(page: Page):
    """The app's own document: inside the sandbox proxy's inner frame."""
    return (
        page.locator(".canvas-view:not([hidden]) iframe.app-frame").last.content_frame.locator("iframe").content_frame
    )


def test_bars_stay_inside_the_plot_and_tabs_are_named_by_their_charts(open_page, llm):
    page = open_page(width=1400, height=900)
    chart(page, llm, y="visits", kind="bar", title="Visits")
    app = app_frame(page)
    expect(app.locator("#title")).to_have_text("Visits", timeout=30_000)
    expect(app.locator("#svg rect")).to_have_count(3)
    boxes = app.locator("#svg").evaluate("""svg => ({
        svg: svg.getBoundingClientRect().toJSON(),
        bars: [...svg.querySelectorAll("rect")].map(r => r.getBoundingClientRect().toJSON()),
        labels: [...svg.querySelectorAll(".axis text[text-anchor=end]")].map(t => t.getBoundingClientRect().toJSON()),
    })""")
    labels_end = max(label["right"] for label in boxes["labels"])
    assert min(bar["left"] for bar in boxes["bars"]) >= labels_end, boxes  # no bar covers a y-axis label
    assert max(bar["right"] for bar in boxes["bars"]) <= boxes["svg"]["right"], boxes  # the last bar is whole

    chart(page, llm, y="signups")
    chart(page, llm, y="visits")
    tabs = page.locator(".canvas-tab[data-kind=app] .tab-name")
    expect(tabs).to_have_count(3)
    assert tabs.all_text_contents() == ["Visits", "chart_csv", "chart_csv 2"]
    widths = tabs.evaluate_all("names => names.map(n => n.scrollWidth - n.clientWidth)")
    assert widths == [0, 0, 0], widths  # shown whole, not cut to "datavi…"


def test_a_failed_chart_call_shows_its_error_instead_of_waiting(open_page, llm):
    page = open_page()
    chart(page, llm, y="nosuchcolumn")
    app = app_frame(page)
    expect(app.get_by_role("alert")).to_contain_text("nosuchcolumn", timeout=30_000)
    expect(app.locator("#title")).not_to_have_text(re.compile("Waiting"))
    expect(app.locator("#plot")).to_be_hidden()


# Runs in the app's own frame: post JSON-RPC messages to the host, keep the answers that come back.
PROBE = """(body, messages) => {
  window.__answers = window.__answers || [];
  if (!window.__listening) {
    window.__listening = true;
    window.addEventListener("message", (e) => { if (e.data && e.data.id !== undefined && !e.data.method) window.__answers.push(e.data); });
  }
  for (const m of messages) window.parent.postMessage({ jsonrpc: "2.0", ...m }, "*");
}"""


def answers_until(page: Page, app, request_id: str) -> dict:
    """The host's answers to the probe's requests once `request_id` has one (they come by postMessage)."""
    for _ in range(300):
        got = {
            a["id"]: a for a in app.locator("body").evaluate("() => window.__answers || []") if isinstance(a["id"], str)
        }
        if request_id in got:
            return got
        page.wait_for_timeout(100)
    raise AssertionError(f"no answer to {request_id}")


def test_size_changes_are_not_rate_limited_and_a_cancelled_request_gets_no_answer(open_page, llm):
    page = open_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    chart(page, llm, y="visits")
    app = app_frame(page)
    expect(app.locator("#series")).to_contain_text("visits", timeout=30_000)
    sizes = [{"method": "ui/notifications/size-changed", "params": {"height": 200 + n}} for n in range(200)]
    app.locator("body").evaluate(PROBE, [*sizes, {"id": "after-sizes", "method": "ping"}])
    assert answers_until(page, app, "after-sizes")["after-sizes"] == {
        "jsonrpc": "2.0",
        "id": "after-sizes",
        "result": {},
    }
    assert not [m for m in console if "rate limit" in m], console

    # A ui/message the app withdraws: the question goes away, nothing is sent, no answer comes.
    users_before = page.locator(".msg.user").count()
    ask = {
        "id": "asked",
        "method": "ui/message",
        "params": {"role": "user", "content": [{"type": "text", "text": "withdrawn"}]},
    }
    app.locator("body").evaluate(PROBE, [ask])
    dialog = page.get_by_role("dialog", name="Send a message?")
    expect(dialog).to_be_visible()
    app.locator("body").evaluate(
        PROBE, [{"method": "notifications/cancelled", "params": {"requestId": "asked", "reason": "timeout"}}]
    )
    expect(dialog).to_be_hidden()
    app.locator("body").evaluate(PROBE, [{"id": "after-cancel", "method": "ping"}])
    assert "asked" not in answers_until(page, app, "after-cancel")
    assert page.locator(".msg.user").count() == users_before
