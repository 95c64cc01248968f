"""The tools panel, the compliance level, attachments, and small screens."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.helpers import card, send, sent_messages, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def test_servers_show_their_status_and_tools_can_be_switched_off(page, llm, watch):
    panel = page.get_by_role("complementary", name="Tools")
    toolbox = panel.locator("details.server[data-server=toolbox]")
    expect(toolbox).to_have_attribute("data-status", "ready")
    expect(toolbox.locator(".server-status")).to_have_text("ready")
    broken = panel.locator("details.server[data-server=broken]")
    expect(broken.locator(".server-status")).to_have_text("failed")
    expect(broken.get_by_role("alert")).not_to_be_empty()
    expect(toolbox.locator(".tool-item", has_text="Delete Everything").locator(".badge")).to_have_text("asks first")

    # Every tool on: `tools` is left out of the chat message.
    llm.enqueue(TextReply("all"))
    send(page, "with everything")
    wait_finished(page)
    assert "tools" not in sent_messages(watch.sent, "chat")[-1]
    offered_before = {t["function"]["name"] for t in llm.requests[-1]["tools"]}
    assert "toolbox_echo" in offered_before

    toolbox.get_by_role("checkbox", name="Echo").uncheck()
    panel.locator("details.server[data-server=dataviz]").get_by_role(
        "checkbox", name="Use every tool of dataviz"
    ).uncheck()
    expect(page.locator("#tools-summary")).to_contain_text("of")
    llm.enqueue(TextReply("fewer"))
    send(page, "with fewer tools")
    wait_finished(page)
    sent = sent_messages(watch.sent, "chat")[-1]["tools"]
    assert "toolbox_echo" not in sent and "toolbox_add" in sent
    assert not any(name.startswith("dataviz_") for name in sent)
    offered = {t["function"]["name"] for t in llm.requests[-1]["tools"]}
    assert offered == set(sent)
    # The choice survives the panel's refresh.
    page.get_by_role("combobox", name="Compliance level").select_option("Public")
    expect(toolbox.get_by_role("checkbox", name="Echo")).not_to_be_checked()


def test_the_compliance_level_is_sent_and_refreshes_what_is_offered(page, llm, watch):
    dataviz = page.locator("details.server[data-server=dataviz]")  # labelled External
    expect(dataviz).to_be_visible()
    with page.expect_request(lambda r: "/api/config?compliance_level=Internal" in r.url):
        page.get_by_role("combobox", name="Compliance level").select_option("Internal")
    expect(dataviz).to_have_count(0)
    llm.enqueue(TextReply("internal"))
    send(page, "hello")
    wait_finished(page)
    assert sent_messages(watch.sent, "chat")[-1]["compliance_level"] == "Internal"


def test_attached_files_are_uploaded_shown_and_sent(page, llm, watch, tmp_path):
    page.locator("#file-input").set_input_files(
        [
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"hello notes"},
            {"name": "data.csv", "mimeType": "text/csv", "buffer": b"a,b\n1,2\n"},
        ]
    )
    chips = page.locator("#attachments .chip")
    expect(chips).to_have_count(2)
    expect(chips.first).to_have_attribute("data-state", "ready")
    expect(chips.nth(1)).to_have_attribute("data-state", "ready")
    page.get_by_role("button", name="Remove data.csv").click()
    expect(chips).to_have_count(1)
    # Drag and drop works too.
    transfer = page.evaluate_handle("""() => {
        const dt = new DataTransfer();
        dt.items.add(new File(['x'], 'dropped.md', { type: 'text/markdown' }));
        return dt;
    }""")
    page.dispatch_event("body", "dragenter", {"dataTransfer": transfer})
    expect(page.locator("#drop-overlay")).to_be_visible()
    page.dispatch_event("body", "drop", {"dataTransfer": transfer})
    expect(page.locator("#drop-overlay")).to_be_hidden()
    expect(chips).to_have_count(2)
    expect(chips.nth(1)).to_have_attribute("data-state", "ready")
    llm.enqueue(TextReply("I see two files."))
    send(page, "read these")
    wait_finished(page)
    message = sent_messages(watch.sent, "chat")[-1]
    assert len(message["files"]) == 2
    expect(page.locator("#attachments .chip")).to_have_count(0)
    expect(page.locator(".msg.user").last.locator(".chip-name")).to_have_text(["notes.txt", "dropped.md"])


def test_attaching_a_file_ticks_the_tools_that_handle_it(page):
    panel = page.get_by_role("complementary", name="Tools")
    dataviz = panel.locator("details.server[data-server=dataviz]")
    dataviz.get_by_role("checkbox", name="Use every tool of dataviz").uncheck()
    page.locator("#file-input").set_input_files(
        [{"name": "sales.csv", "mimeType": "text/csv", "buffer": b"m,s\n1,2\n"}]
    )
    expect(page.locator("#attachments .chip").first).to_have_attribute("data-state", "ready")
    # The tools the model is offered are ticked (the chart app's own tool is for the app only).
    expect(dataviz.locator('input[data-tool="dataviz_chart_csv"]')).to_be_checked()


def test_resources_and_prompts(page, llm, watch, shots):
    panel = page.get_by_role("complementary", name="Tools")
    panel.get_by_role("button", name="Attach readme").click()
    panel.locator(".library-item", has_text="note").locator("summary").click()
    panel.get_by_role("textbox", name="name", exact=True).fill("alpha")
    panel.locator(".library-item", has_text="note").get_by_role("button", name="Attach").click()
    chips = page.locator("#attachments .chip")
    expect(chips.locator(".chip-name")).to_have_text(["readme", "toolbox://notes/alpha"])
    page.get_by_role("button", name="Remove toolbox://notes/alpha").click()
    expect(chips).to_have_count(1)
    # A prompt, filled in by its server, lands in the message box.
    review = panel.locator(".library-item", has_text="review")
    review.locator("summary").click()
    review.get_by_label("code").fill("x = 1")
    review.get_by_role("button", name="Use prompt").click()
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_have_value("Please review this python code:\nx = 1")
    expect(box).to_be_focused()
    review.scroll_into_view_if_needed()
    shots(page, "14-resources-prompts")
    llm.enqueue(TextReply("The secret word is marmalade."))
    box.press("Enter")
    wait_finished(page)
    assert sent_messages(watch.sent, "chat")[-1]["resources"] == [{"server": "toolbox", "uri": "toolbox://readme"}]
    question = [m for m in llm.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    assert "marmalade" in question and "Please review" in question
    expect(chips).to_have_count(0)


def test_a_too_large_file_is_refused_before_upload(page):
    limit = page.evaluate("JSON.parse(document.getElementById('page-data').textContent).max_upload_bytes")
    page.evaluate(
        """(size) => {
        const dt = new DataTransfer();
        dt.items.add(new File([new Uint8Array(size + 1)], 'huge.bin'));
        const input = document.getElementById('file-input');
        input.files = dt.files;
        input.dispatchEvent(new Event('change'));
    }""",
        limit,
    )
    chip = page.locator("#attachments .chip")
    expect(chip).to_have_attribute("data-state", "failed")
    expect(chip).to_contain_text("limit")


def test_phone_width_uses_drawers(open_page, llm, shots):
    page = open_page(width=390, height=844)
    panel = page.locator("#tools-panel")
    expect(panel).to_be_hidden()
    page.get_by_role("button", name="Tools").click()
    expect(panel).to_be_visible()
    shots(page, "09-phone-tools")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    expect(page.get_by_role("button", name="Tools")).to_be_focused()
    llm.enqueue(ToolCallReply([ToolCall("fixtures_files", "{}")]), TextReply("Report ready."))
    send(page, "report")
    answer = wait_finished(page)
    expect(answer).to_contain_text("Report ready.")
    # The artifacts do not cover the answer: the canvas opens when asked.
    canvas = page.locator("#canvas")
    expect(canvas).to_be_hidden()
    expect(answer.locator(".answer-text")).to_be_in_viewport()
    toggle = page.get_by_role("button", name="Canvas (5)")
    expect(toggle).to_be_visible()
    toggle.click()
    expect(canvas).to_be_visible()
    box = canvas.bounding_box()
    assert box["width"] == 390 and box["x"] == 0
    expect(canvas.get_by_role("tab", name="report.pdf")).to_have_attribute("aria-selected", "true")
    # Every tab's close button is whole on screen, and it is what a tap there hits.
    closes = canvas.locator(".tab-close")
    expect(closes).to_have_count(5)
    for close in closes.all():
        b = close.bounding_box()
        assert b["x"] >= 0 and b["x"] + b["width"] <= 390, b
        assert close.evaluate("""(btn) => {
            const r = btn.getBoundingClientRect();
            return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === btn;
        }""")
    shots(page, "10-phone-canvas")
    closes.nth(4).click()
    expect(canvas.get_by_role("tab")).to_have_count(4)
    page.get_by_role("button", name="Close canvas").click()
    expect(canvas).to_be_hidden()
    # A file chip opens the canvas on that file.
    card(page, "fixtures_files").locator(".chip-artifact", has_text="cities.csv").click()
    expect(canvas.get_by_role("tab", name="cities.csv")).to_have_attribute("aria-selected", "true")
    page.get_by_role("button", name="Close canvas").click()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shots(page, "11-phone-chat")


def test_dark_theme(open_page, llm, shots):
    page = open_page(color_scheme="dark")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(20, 21, 24)"
    llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 2, "delay_s": 0.1}')]), TextReply("Done, **dark**."))
    send(page, "slow in the dark")
    expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "done")
    wait_finished(page)
    shots(page, "12-dark")


def test_keyboard_only_use(page, llm):
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("textbox", name="Message")).not_to_be_focused()
    page.get_by_role("textbox", name="Message").focus()
    page.keyboard.type("typed")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Send")).to_be_focused()
    focus_ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert focus_ring != "none"
    llm.enqueue(TextReply("keyboard ok"))
    page.keyboard.press("Enter")
    expect(wait_finished(page)).to_contain_text("keyboard ok")


def test_a_status_summary_sits_on_top_of_the_tools_panel(page):
    status = page.locator("#servers-status")
    expect(status.locator(".status-line")).to_have_text("5 servers: 4 ready, 1 failed")
    expect(status.locator(".status-failed")).to_have_text("Failed: broken")
    expect(status.locator(".status-offers")).to_have_text(re.compile(r"^\d+ tools · \d+ resources · 1 prompt$"))
    assert status.bounding_box()["y"] < page.locator("#servers").bounding_box()["y"]
    # The failed server's name leads to its entry, with the reason.
    status.get_by_role("button", name="broken").click()
    broken = page.locator("details.server[data-server=broken]")
    expect(broken.locator("summary")).to_be_focused()
    expect(broken.locator(".server-reason")).to_be_in_viewport()
