"""A fast stream costs the page what is new, not the whole answer: what comes within a frame is
drawn once at the next one, and finished blocks go in groups that are never changed again and
that the browser skips while they are off-screen."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.helpers import send, wait_finished
from tests.browser.test_long_answer import long_markdown
from tests.support.llm_double import TextReply

# Counts changes inside a group of finished blocks once it is in the page (it must get none).
WATCH_GROUPS = """() => {
  window.groupChanges = 0;
  new MutationObserver((records) => {
    for (const r of records) if (r.target.closest?.('.blocks-done')) window.groupChanges += 1;
  }).observe(document.querySelector('#messages') || document.body,
             {childList: true, subtree: true, characterData: true, attributes: true});
}"""

# Fifty renders and tokens within one task, as a fast stream brings them between two frames.
ONE_FRAME = """async () => {
  const { Turn } = await import('/static/messages.js');
  const turn = new Turn({ changed() {} });
  document.body.append(turn.node);
  turn.token('first ');
  const block = turn.current;
  let records = 0;
  new MutationObserver((list) => { records += list.length; })
    .observe(block.node, {childList: true, subtree: true, characterData: true});
  for (let i = 0; i < 50; i++) {
    turn.token(`piece ${i} `);
    turn.render({ message_id: 'm', settled: `<p>block ${i}</p>`, open: `<p>open ${i}</p>` });
  }
  turn.token('after');
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
  await frame();
  const drawn = { records, html: block.rendered.innerHTML, tail: block.tailText.data };
  turn.token(' more');
  await frame();
  turn.node.remove();
  return { ...drawn, later: block.tailText.data, raw: block.raw.length };
}"""


def test_what_comes_within_a_frame_is_drawn_once(page):
    drawn = page.evaluate(ONE_FRAME)
    blocks = "".join(f"<p>block {i}</p>" for i in range(50))
    assert drawn["html"] == f'<div class="blocks-done">{blocks}</div><p>open 49</p>'
    assert drawn["tail"] == "after" and drawn["later"] == "after more"
    # One frame's drawing: the group, the open block, the raw text (one by one: 150 changes).
    assert drawn["records"] <= 4, drawn["records"]
    assert drawn["raw"] == len("first " + "".join(f"piece {i} " for i in range(50)) + "after more")


def test_finished_blocks_are_drawn_once_in_groups_skipped_off_screen(page, llm):
    text = long_markdown(80)
    llm.chunk_delay_s = 0.002
    llm.enqueue(TextReply(text, chunks=len(text) // 13))
    page.evaluate(WATCH_GROUPS)
    send(page, "Write a long answer")
    answer = wait_finished(page)
    expect(answer.locator(".markdown h2")).to_have_count(80)
    groups = answer.locator(".markdown > .blocks-done")
    assert groups.count() > 1
    assert page.evaluate("window.groupChanges") == 0
    assert groups.count() > 6
    assert groups.first.evaluate("(g) => getComputedStyle(g).contentVisibility") == "auto"
    # ...but not the newest few: a new group under content-visibility starts as a placeholder,
    # which at the stream's end kept the browser presenting typed keys seconds late
    assert groups.last.evaluate("(g) => getComputedStyle(g).contentVisibility") == "visible"
    # every group is contained, the newest too: a frame lays out and pre-paints the group it adds,
    # not the answer above it, and a group keeps its layout when content-visibility takes it over
    assert set(groups.evaluate_all("(gs) => gs.map((g) => getComputedStyle(g).contain)")) == {"content"}
    # Only the last block is outside the groups (it grew until the end): the rest went in once.
    outside = answer.locator(".markdown > :not(.blocks-done)")
    assert outside.count() <= 2, outside.evaluate_all("(nodes) => nodes.map((n) => n.outerHTML.slice(0, 80))")
    expect(groups.first.locator("h2").first).to_have_text("Part 0")
