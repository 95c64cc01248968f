"""What a reload must not lose: a failed answer's reason, the token count, the "Approved." note,
and how long a tool has been running."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from tests.browser.helpers import card, last_answer, send, wait_finished
from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply


def _elapsed_s(status: str) -> float:
    """ "Running · 3.2 s" -> 3.2; "Running · 700 ms" -> 0.7."""
    number, unit = re.search(r"([\d.]+) (ms|s)\b", status).groups()
    return float(number) / (1000 if unit == "ms" else 1)


def _reload(page):
    page.reload()
    page.get_by_role("status").filter(has_text="Connected").wait_for()


def test_a_failed_answer_keeps_its_reason_and_an_answer_its_tokens_after_a_reload(page, live, llm):
    llm.enqueue(
        TextReply("Counted for you.", usage={"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234})
    )
    send(page, "count tokens")
    expect(wait_finished(page).locator(".usage")).to_have_text("1,234 tokens")
    llm.enqueue(ErrorReply(400, "the prompt names a forbidden colour"))
    send(page, "and now fail")
    failed = wait_finished(page, "error")
    reason = failed.get_by_role("alert")
    expect(reason).to_contain_text("forbidden colour")
    shown = [reason.locator(".alert-message").inner_text(), reason.locator(".alert-action").inner_text()]

    _reload(page)
    answers = page.locator(".msg.assistant")
    expect(answers).to_have_count(2)
    expect(answers.nth(0).locator(".usage")).to_have_text("1,234 tokens")
    expect(answers.nth(1)).to_have_attribute("data-finish", "error")
    stored = answers.nth(1).get_by_role("alert")
    expect(stored.locator(".alert-message")).to_have_text(shown[0])
    expect(stored.locator(".alert-action")).to_have_text(shown[1])

    # The Markdown export carries the failed answer and why it failed.
    conversation_id = page.evaluate("new URL(location.href).searchParams.get('c')")
    exported = httpx.get(f"{live.url}/api/conversations/{conversation_id}/export?format=md", timeout=10).text
    assert "forbidden colour" in exported, exported
    assert exported.index("and now fail") < exported.index("forbidden colour")


def test_the_approved_note_and_a_running_tools_true_age_survive_a_reload(page, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("Deleted."))
    send(page, "delete everything")
    tool = card(page, "toolbox_delete_everything")
    tool.get_by_role("button", name="Approve").click()
    expect(tool.locator(".approval-answer")).to_have_text("Approved.")
    wait_finished(page)
    _reload(page)
    expect(card(page, "toolbox_delete_everything").locator(".approval-answer")).to_have_text("Approved.")

    # A tool that has run for a while when the page reloads shows its whole running time.
    llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 16, "delay_s": 0.5}')]), TextReply("Slow done."))
    send(page, "take your time")
    expect(card(page, "toolbox_slow")).to_have_attribute("data-state", "running")
    page.wait_for_timeout(3000)
    _reload(page)
    slow = card(page, "toolbox_slow")
    expect(slow).to_have_attribute("data-state", "running")
    status = slow.locator(".tool-status")
    expect(status).to_contain_text("Running")
    assert _elapsed_s(status.inner_text()) >= 2.5, status.inner_text()
    expect(slow).to_have_attribute("data-state", "done", timeout=15_000)
    expect(last_answer(page)).to_contain_text("Slow done.")
