"""Script-looking text from the model, tools, tool servers and artifacts is
shown as text or sanitized; nothing of it runs in the page.  The `page`
fixture fails the test when any dialog opened or any page script threw."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.helpers import card, send, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '"><svg onload=alert(1)>',
    "[click me](javascript:alert(1))",
    '<a href="javascript:alert(1)">js link</a>',
    "<iframe src=javascript:alert(1)></iframe>",
]

INJECTED = """() => {
  const found = document.querySelectorAll(
    'img[src=x], img[onerror], svg[onload], script:not([src]):not([type="application/json"]), [onmouseover], [onload], iframe[src^="javascript"], a[href^="javascript"], b');
  return [...found].map((n) => n.outerHTML);
}"""


def assert_nothing_injected(page):
    assert page.evaluate(INJECTED) == []
    assert page.evaluate("document.body.dataset.pwned") is None


def test_hostile_model_output_is_rendered_harmless(page, llm):
    text = "Model says:\n\n" + "\n\n".join(PAYLOADS) + "\n\n`<b>code</b>`"
    llm.chunk_delay_s = 0.05
    try:
        llm.enqueue(TextReply(text, chunks=10))
        send(page, "be evil " + PAYLOADS[0])
        answer = wait_finished(page)
    finally:
        llm.chunk_delay_s = 0.0
    expect(answer).to_contain_text("<img src=x onerror=alert(1)>")
    expect(answer).to_contain_text("<script>alert(1)</script>")
    expect(answer.get_by_role("link")).to_have_count(0)
    expect(page.locator(".msg.user .bubble").last).to_have_text("be evil " + PAYLOADS[0])
    assert_nothing_injected(page)


def test_hostile_tool_results_logs_names_and_artifacts_stay_inert(page, llm, shots):
    llm.enqueue(
        ToolCallReply([ToolCall("fixtures_hostile", "{}")]),
        ToolCallReply([ToolCall("fixtures_fail_hostile", "{}")]),
        TextReply("done " + PAYLOADS[2]),
    )
    send(page, "hostile tools")
    wait_finished(page)
    hostile = card(page, "fixtures_hostile")
    expect(hostile).to_have_attribute("data-state", "done")
    expect(hostile.locator(".result-summary")).to_have_text(
        "hostile <img src=x onerror=alert(1)> <script>alert(1)</script>"
    )
    expect(hostile.locator(".tool-logs")).to_contain_text("log line <img src=x onerror=alert(1)>")
    failed = card(page, "fixtures_fail_hostile")
    expect(failed.locator(".tool-error")).to_contain_text("<script>alert(1)</script>")
    # Artifact names are free text: shown as text in chips and tabs.
    expect(hostile.locator(".artifacts .chip-name")).to_have_text(
        [
            "<img src=x onerror=alert(1)>.png",
            '"><svg onload=alert(1)>.md',
            "<b onmouseover=alert(1)>x.csv",
            "<iframe onload=alert(1)>.html",
            "hostile.txt",
        ]
    )
    canvas = page.locator("#canvas")
    expect(canvas.get_by_role("tab", name="<iframe onload=alert(1)>.html")).to_have_attribute("aria-selected", "true")
    # The HTML artifact's server is not trusted with scripts: its page shows,
    # its script does not run (no alert, no reaching the page, no WebRTC).
    frame = page.frame_locator("#canvas .canvas-view:not([hidden]) iframe")
    expect(frame.locator("#inside")).to_have_text("Sandboxed page")
    sandbox = canvas.locator("iframe.viewer-html").get_attribute("sandbox")
    assert sandbox == ""
    # Markdown is sanitized on the server; CSV cells and text are text.
    canvas.get_by_role("tab", name='"><svg onload=alert(1)>.md').click()
    md = canvas.locator(".viewer-markdown")
    expect(md.locator("h1")).to_have_text("Hostile notes")
    expect(md).to_contain_text("<img src=x onerror=alert(1)>")
    canvas.get_by_role("tab", name="<b onmouseover=alert(1)>x.csv").click()
    expect(canvas.locator("table.csv-table th").nth(1)).to_have_text("<b>bold</b>")
    expect(canvas.locator("table.csv-table td").first).to_have_text("<img src=x onerror=alert(1)>")
    canvas.get_by_role("tab", name="hostile.txt").click()
    expect(canvas.locator("pre.viewer-text")).to_contain_text("<script>alert(1)</script>")
    canvas.get_by_role("tab", name="<img src=x onerror=alert(1)>.png").click()
    expect(canvas.locator(".viewer-image img")).to_have_attribute("alt", "<img src=x onerror=alert(1)>.png")
    page.locator(".tool-card .tool-args summary").first.click()
    shots(page, "08-hostile")
    assert_nothing_injected(page)


def test_hostile_server_descriptions_and_tool_titles_are_text(page):
    panel = page.get_by_role("complementary", name="Tools")
    server = panel.locator("details.server[data-server=fixtures]")
    expect(server.locator(".server-desc")).to_contain_text("<script>alert('server description')</script>")
    expect(server.locator(".tool-label", has_text=re.compile("^Hostile"))).to_have_text(
        'Hostile <img src=x onerror=alert("title")>'
    )
    assert_nothing_injected(page)
