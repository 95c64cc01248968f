"""The conversation itself: streaming, markdown, notes, errors, new chat."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.helpers import last_answer, send, sent_messages, wait_finished
from tests.support.llm_double import ErrorReply, TextReply

ANSWER = (
    "Here is **the table** you asked for:\n\n"
    "| city | people |\n|---|---|\n| Oslo | 709037 |\n| Bergen | 291940 |\n\n"
    "```python\nprint('hello')\n```\n\nSee [the docs](https://example.com/docs)."
)


def test_an_answer_streams_in_and_ends_rendered_as_markdown(page, llm, shots):
    llm.chunk_delay_s = 0.12
    try:
        llm.enqueue(TextReply(ANSWER, chunks=12))
        send(page, "Show me a table")
        expect(page.locator(".msg.user .bubble").last).to_have_text("Show me a table")
        answer = last_answer(page)
        # While it streams, the raw text is there and the turn is busy.
        expect(answer).to_have_attribute("aria-busy", "true")
        expect(answer.locator(".answer-text")).to_contain_text("Here is")
        expect(page.get_by_role("button", name="Stop")).to_be_visible()
        shots(page, "01-streaming")
    finally:
        llm.chunk_delay_s = 0.0
    wait_finished(page)
    expect(answer).not_to_have_attribute("aria-busy", "true")
    expect(answer.locator("strong")).to_have_text("the table")
    expect(answer.locator("table tbody tr")).to_have_count(2)
    expect(answer.locator("table td").first).to_have_text("Oslo")
    expect(answer.locator("pre code")).to_have_text("print('hello')")
    assert "**" not in answer.locator(".answer-text").inner_text()
    # Links open in a new tab without access to this page.
    link = answer.get_by_role("link", name="the docs")
    expect(link).to_have_attribute("target", "_blank")
    assert "noopener" in (link.get_attribute("rel") or "")
    # Code blocks get a copy button that copies the code.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    answer.get_by_role("button", name="Copy code").click()
    expect(answer.get_by_role("button", name="Copy code")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "print('hello')\n"
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    shots(page, "02-markdown")


def test_shift_enter_makes_a_new_line_and_enter_sends(page, llm):
    llm.enqueue(TextReply("got it"))
    box = page.get_by_role("textbox", name="Message")
    box.type("line one")
    box.press("Shift+Enter")
    box.type("line two")
    expect(box).to_have_value("line one\nline two")
    box.press("Enter")
    expect(page.locator(".msg.user .bubble").last).to_have_text("line one\nline two")
    expect(box).to_have_value("")
    expect(wait_finished(page)).to_contain_text("got it")


def test_cut_off_answers_and_model_errors_are_explained(page, llm):
    llm.enqueue(TextReply("This answer is cut", finish_reason="length"))
    send(page, "long please")
    expect(wait_finished(page, "length").locator(".finish-note")).to_contain_text("length limit")

    llm.enqueue(ErrorReply(401, "invalid api key"))
    send(page, "again")
    answer = last_answer(page)
    alert = answer.get_by_role("alert")
    expect(alert).to_be_visible()
    expect(answer).to_have_attribute("data-finish", "error")
    # The error event's action text tells the user what to do.
    expect(alert.locator(".alert-action")).not_to_be_empty()
    page.get_by_role("textbox", name="Message").fill("and now?")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    # A call that works again clears the model's failure: it is the site's default once more.
    llm.enqueue(TextReply("working again"))
    page.get_by_role("button", name="Send").click()
    expect(wait_finished(page)).to_contain_text("working again")


def test_an_unavailable_model_is_greyed_out_and_the_demo_model_is_labelled(page):
    picker = page.get_by_role("combobox", name="Model", exact=True)
    paid = picker.locator("option[value=paid]")
    expect(paid).to_be_disabled()
    expect(paid).to_contain_text("unavailable")
    assert "MISSING_KEY" in (paid.get_attribute("title") or "") + paid.inner_text()
    expect(picker.locator("option[value=demo]")).to_contain_text("demo")
    expect(picker).to_have_value("double")
    picker.select_option("demo")
    expect(page.locator("#model-note .badge-demo")).to_have_text("demo")


def test_new_chat_clears_the_view_and_starts_a_fresh_conversation(page, llm, watch):
    llm.enqueue(TextReply("first answer"), TextReply("second answer"))
    send(page, "first")
    wait_finished(page)
    page.get_by_role("button", name="New chat").click()
    expect(page.locator(".msg")).to_have_count(0)
    expect(page.get_by_role("heading", name="What can I help with?")).to_be_visible()
    expect(page.get_by_role("textbox", name="Message")).to_be_focused()
    send(page, "second")
    expect(wait_finished(page)).to_contain_text("second answer")
    chats = sent_messages(watch.sent, "chat")
    assert len(chats) == 2
    assert chats[0]["conversation_id"] != chats[1]["conversation_id"]
    assert len(llm.requests[-1]["messages"]) == 2  # system + the new question: nothing of the old chat


def test_the_view_follows_new_text_unless_the_reader_scrolled_up(page, llm):
    long_text = "\n\n".join(f"Paragraph {i}: " + "words " * 30 for i in range(40))
    llm.chunk_delay_s = 0.05
    try:
        llm.enqueue(TextReply(long_text, chunks=40))
        send(page, "write a lot")
        messages = page.locator("#messages")
        at_bottom = "m => m.scrollHeight - m.scrollTop - m.clientHeight < 60"
        page.wait_for_function(
            "() => { const m = document.getElementById('messages');"
            " return m.scrollHeight > 2 * m.clientHeight && m.scrollTop > m.clientHeight; }"
        )
        page.mouse.move(700, 400)
        page.mouse.wheel(0, -100000)  # the reader scrolls up to the top
        jump = page.get_by_role("button", name="Newest")
        expect(jump).to_be_visible()
        page.wait_for_function("() => document.getElementById('messages').scrollTop === 0")
        page.wait_for_timeout(300)
        assert messages.evaluate("m => m.scrollTop") == 0
    finally:
        llm.chunk_delay_s = 0.0
    wait_finished(page)
    assert messages.evaluate("m => m.scrollTop") == 0
    jump.click()
    assert messages.evaluate(at_bottom)
    expect(jump).to_be_hidden()


def test_a_retried_model_call_is_explained_while_the_user_waits(page, llm):
    llm.enqueue(ErrorReply(429, "Rate limit reached", retry_after="1"), TextReply("Thanks for waiting."))
    send(page, "are you there?")
    answer = last_answer(page)
    notice = answer.get_by_role("status").filter(has_text="rate-limiting")
    expect(notice).to_have_text(
        "The provider of model 'double' is rate-limiting requests; trying again in 1.0 s (attempt 2 of 3)."
    )
    expect(wait_finished(page).locator(".answer-text")).to_have_text("Thanks for waiting.")
    expect(notice).to_be_visible()  # kept: it explains why this answer was slow


def test_send_is_disabled_while_there_is_nothing_to_send(page, llm, watch):
    send_button = page.get_by_role("button", name="Send")
    box = page.get_by_role("textbox", name="Message")
    expect(send_button).to_be_disabled()
    box.fill("   ")
    expect(send_button).to_be_disabled()
    box.press("Enter")
    assert sent_messages(watch.sent, "chat") == []
    box.fill("hello")
    expect(send_button).to_be_enabled()
    box.fill("")
    expect(send_button).to_be_disabled()
    # A file alone is something to send.
    page.locator("#file-input").set_input_files(
        [{"name": "alone.txt", "mimeType": "text/plain", "buffer": b"just a file"}]
    )
    expect(page.locator("#attachments .chip").first).to_have_attribute("data-state", "ready")
    expect(send_button).to_be_enabled()
    llm.enqueue(TextReply("got the file"))
    send_button.click()
    expect(wait_finished(page)).to_contain_text("got the file")
    message = sent_messages(watch.sent, "chat")[-1]
    assert message["content"] == "" and len(message["files"]) == 1
    expect(send_button).to_be_disabled()
