"""A message sent while the page cannot send yet (the answer before it is still finishing) is
queued, shown as queued, and sent once the page is ready: never dropped."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.helpers import last_answer, send, sent_messages
from tests.support.llm_double import TextReply


def test_a_message_sent_right_after_an_answer_appears_is_queued_and_sent(page, llm, watch):
    # The provider streams the text at once, then takes its time over the finish and usage
    # chunks: the answer is on screen for a second or two before the turn ends.
    llm.chunk_delay_s = 0.7
    llm.enqueue(TextReply("First answer.", chunks=1), TextReply("Second answer.", chunks=1))
    send(page, "first question")
    expect(last_answer(page)).to_contain_text("First answer.")
    expect(last_answer(page)).not_to_have_attribute("data-finish", "stop")  # the turn still runs

    box = page.get_by_role("textbox", name="Message")
    send(page, "second question")
    expect(page.locator("#composer")).to_have_attribute("data-queued", "true")
    expect(page.locator("#composer-hint")).to_contain_text("Queued")

    answers = page.locator(".msg.assistant")
    expect(answers).to_have_count(2, timeout=15_000)
    expect(answers.nth(0)).to_have_attribute("data-finish", "stop")
    expect(answers.nth(1)).to_contain_text("Second answer.", timeout=15_000)
    expect(answers.nth(1)).to_have_attribute("data-finish", "stop", timeout=15_000)
    expect(page.locator(".msg.user").nth(1)).to_contain_text("second question")
    expect(box).to_have_value("")
    expect(page.locator("#composer")).not_to_have_attribute("data-queued", "true")
    chats = [m["content"] for m in sent_messages(watch.sent, "chat")]
    assert chats == ["first question", "second question"]
