"""A long answer streams into the page block by block: a finished block is drawn once and stays,
and the finished answer is exactly its whole rendering (what opening it from its link shows),
with nothing lost or doubled where blocks meet."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.helpers import last_answer, send, wait_finished
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def long_markdown(sections: int) -> str:
    out = []
    for n in range(sections):
        out.append(
            f"## Part {n}\n\nSome **bold** words and `code` in part {n},\nover two lines.\n\n"
            f"- item {n}.1\n- item {n}.2\n  - nested {n}\n\n"
            f"```python\ndef part_{n}():\n\n    return {n}  # a blank line above, inside the fence\n```\n\n"
            f"| part | square |\n|---|--:|\n| {n} | {n * n} |\n| {n + 1} | {(n + 1) ** 2} |\n\n"
            f"> quoted {n}\n\n1. first\n2. second\n\n"
        )
    return "".join(out)


# The answer's blocks, as drawn: a streamed answer's finished blocks sit in groups (`.blocks-done`).
_BLOCKS = """(markdown) => [...markdown.children]
  .flatMap((node) => node.classList.contains('blocks-done') ? [...node.children] : [node])
  .map((node) => node.outerHTML).join('')"""


def _markdown_html(page: Page) -> str:
    return page.evaluate(
        f"() => ({_BLOCKS})([...document.querySelectorAll('.msg.assistant')].at(-1).querySelector('.markdown'))"
    )


def _wait_for_headings(page: Page, count: int) -> None:
    page.wait_for_function(
        "(n) => ([...document.querySelectorAll('.msg.assistant')].at(-1)?.querySelectorAll('.markdown h2').length ?? 0) >= n",
        arg=count,
        timeout=30_000,
    )


def test_a_long_answer_is_drawn_block_by_block_and_ends_as_its_whole_rendering(page, llm, watch):
    text = long_markdown(60)  # ~20 KB, in pieces that split blocks, fences and table rows anywhere
    llm.chunk_delay_s = 0.003
    llm.enqueue(TextReply(text, chunks=len(text) // 13))
    send(page, "Write a long answer")
    _wait_for_headings(page, 3)
    # The first heading, once drawn, is the same node to the end: finished blocks are not drawn again.
    page.evaluate(
        "() => { window.firstHeading = [...document.querySelectorAll('.msg.assistant')].at(-1).querySelector('.markdown h2'); }"
    )
    answer = wait_finished(page)
    live = _markdown_html(page)
    assert page.evaluate("window.firstHeading.isConnected && window.firstHeading.textContent") == "Part 0"
    expect(answer.locator(".streaming-text")).to_have_text("")
    expect(answer.locator(".markdown h2")).to_have_count(60)
    expect(answer.locator(".markdown table")).to_have_count(60)
    expect(answer.locator(".markdown .code-block pre code")).to_have_count(60)
    expect(answer.locator(".markdown .code-block pre code").nth(59)).to_have_text(
        "def part_59():\n\n    return 59  # a blank line above, inside the fence\n"
    )
    # Opened from its link, the stored answer is drawn from its whole HTML at once: the same.
    page.reload()
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    expect(last_answer(page).locator(".markdown h2")).to_have_count(60)
    assert _markdown_html(page) == live


def test_each_round_of_a_tool_answer_stays_beside_its_tool_card(page, llm):
    first, second = long_markdown(3), long_markdown(40)
    llm.chunk_delay_s = 0.003
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "hi"}')], text=first),
        TextReply(second, chunks=len(second) // 11),
    )
    send(page, "Look it up, then write a long answer")
    answer = wait_finished(page)
    texts = answer.locator(".answer-text")
    expect(texts).to_have_count(2)
    expect(texts.nth(0).locator("h2")).to_have_count(3)
    expect(texts.nth(1).locator("h2")).to_have_count(40)
    expect(answer.locator(".blocks > *").nth(1)).to_have_class(re.compile(r"\btool-card\b"))
    live = answer.locator(".markdown").evaluate_all(f"(nodes) => nodes.map({_BLOCKS})")
    page.reload()
    page.get_by_role("status").filter(has_text="Connected").wait_for()
    expect(last_answer(page).locator(".markdown h2").last).to_have_text("Part 39")
    assert last_answer(page).locator(".markdown").evaluate_all(f"(nodes) => nodes.map({_BLOCKS})") == live


def test_table_columns_keep_their_alignment_without_inline_styles(page, llm):
    """A column's alignment comes as a class: the page's CSP applies no inline style, and each
    refused style attribute was a violation report, which made parsing an answer full of tables in
    the page ten times slower than on a blank page."""
    refused: list[str] = []
    page.on("console", lambda message: "Content Security Policy" in message.text and refused.append(message.text))
    text = long_markdown(4)
    llm.enqueue(TextReply(text, chunks=30))
    send(page, "Write a table")
    answer = wait_finished(page)
    expect(answer.locator(".markdown table")).to_have_count(4)
    squares = answer.locator(".markdown td:nth-child(2)")
    assert squares.first.evaluate("(td) => getComputedStyle(td).textAlign") == "right"
    assert (
        answer.locator(".markdown td:nth-child(1)").first.evaluate("(td) => getComputedStyle(td).textAlign") == "left"
    )
    expect(answer.locator(".markdown [style]")).to_have_count(0)
    assert refused == []


def test_a_fast_long_answer_goes_in_a_frames_share_at_a_time_and_ends_whole(page, llm):
    """At a stream far faster than any model, a render brings tens of KB in one frame. The page
    draws a frame's share of finished blocks (about 12,000 characters of text) and the rest at the
    next frames; the answer is marked finished only once all of it is on the page."""
    text = long_markdown(300)  # ~100 KB, as fast as the app takes it
    llm.enqueue(TextReply(text, chunks=len(text) // 16))
    page.evaluate(
        """() => new MutationObserver((changes) => {
          for (const change of changes) {
            if (change.target.matches('.msg.assistant[data-finish]') && window.headingsAtFinish === undefined) {
              window.headingsAtFinish = change.target.querySelectorAll('.markdown h2').length;
            }
          }
        }).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-finish']})"""
    )
    send(page, "Write a very long answer")
    answer = wait_finished(page)
    assert page.evaluate("window.headingsAtFinish") == 300
    expect(answer.locator(".streaming-text")).to_have_text("")
    groups = answer.locator(".markdown > .blocks-done").evaluate_all(
        "(groups) => groups.map((group) => [group.textContent.length, group.lastElementChild.textContent.length])"
    )
    assert len(groups) > 1
    assert all(size - last < 12_000 for size, last in groups), groups  # a frame's share, and the block that passed it
    expect(answer.locator(".markdown .code-block pre code").nth(299)).to_have_text(
        "def part_299():\n\n    return 299  # a blank line above, inside the fence\n"
    )
