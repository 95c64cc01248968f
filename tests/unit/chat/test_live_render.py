"""An answer rendered live in top-level blocks: what the renders send adds up to the whole
answer's HTML at every step (nothing lost or sent twice across block boundaries), and each
finished block is rendered once."""

from __future__ import annotations

import pytest

from switchboard.chat.growing import GrowingText
from switchboard.chat.views.live_render import RENDER_AFTER_CHARS, LiveRender, final_html
from switchboard.chat.views.render import render_blocks, render_markdown

ANSWER = """# Title

Intro with **bold**, `code` and a [link](https://example.com/a?b=c) <script>alert(1)</script>
that goes on a second line.

Setext heading
--------------

- one
- two
  - nested *item*

- loose after a blank line

1. first
2. second

> quoted
lazy continuation

```python
def f(x):

    return x  # a blank line inside the fence
```

    indented code

| a | b |
|---|--:|
| 1 | 2 |
| 3 | 4 |

***

Closing paragraph <img src=x onerror=alert(2)>.
"""


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 7, 16, 113])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_renders_add_up_to_the_whole_answer_at_every_step(size, newline):
    text = ANSWER.replace("\n", newline) * 3
    live, grown, settled, last = LiveRender(), GrowingText(), [], ""
    for piece in _pieces(text, size):
        grown.add(piece)
        done, last = live.render_now(grown.since(live.settled))
        settled.append(done)
        assert "".join(settled) + last == render_markdown(grown.text())
    assert "<script" not in "".join(settled) and "<img" not in "".join(settled)
    assert "<table>" in "".join(settled) and 'class="language-python"' in "".join(settled)


def test_a_finished_block_is_rendered_once_and_the_last_one_again():
    chars, done, last = render_blocks("# A\n\npara one\n\n```\ncode\n")
    assert chars == len("# A\n\npara one\n\n")
    assert done == "<h1>A</h1>\n<p>para one</p>\n" and last == "<pre><code>code\n</code></pre>\n"
    assert render_blocks("just one paragraph, still growing") == (0, "", "<p>just one paragraph, still growing</p>\n")


@pytest.mark.parametrize("blocks", [True, False])
def test_live_renders_cost_time_linear_in_the_answer(blocks):
    # Every render costs the length of the text not yet settled. With the answer in paragraphs
    # that stays small; with one block growing for 200 KB (the worst case), renders come only
    # when it grew by a quarter.
    piece = "word " * 20 + ("\n\n" if blocks else "\n")
    live, grown, rendered_chars, renders = LiveRender(), GrowingText(), 0, 0
    for _ in range(2000):
        grown.add(piece)
        if live.due(len(grown)):
            rest = grown.since(live.settled)
            rendered_chars, renders = rendered_chars + len(rest), renders + 1
            live.render_now(rest)
    assert rendered_chars < (3 if blocks else 6) * len(grown), (rendered_chars, len(grown))
    assert renders > 1000 if blocks else renders < 40


def test_growing_text_since():
    text = GrowingText()
    for piece in ["ab", "", "cde", "f", "ghij"]:
        text.add(piece)
    assert [text.since(i) for i in (0, 1, 2, 5, 9, 10, 12)] == [
        "abcdefghij",
        "bcdefghij",
        "cdefghij",
        "fghij",
        "j",
        "",
        "",
    ]
    assert text.text() == "abcdefghij" and text.since(3) == "defghij"


def test_a_fast_stream_is_rendered_every_few_kilobytes_before_the_interval():
    # At a fast model's pace a quarter second brings tens of KB: drawn at once, they froze the page.
    live = LiveRender()
    assert not live.due(63) and live.due(64)  # the interval passed: as soon as it grew enough
    assert not live.due(RENDER_AFTER_CHARS - 1, waited=False) and live.due(RENDER_AFTER_CHARS, waited=False)
    live.render_now("para\n\n" * 2000)  # a long answer so far: only its last paragraph stays open
    assert live.settled == 6 * 1999 and not live.due(live.settled + 100, waited=False)
    assert live.due(live.settled + RENDER_AFTER_CHARS + 6, waited=False)


@pytest.mark.parametrize(
    "tail", ["", "\n\nMore text after the stream's last render, and a [link][ref].\n\n[ref]: https://a.example/\n"]
)
async def test_the_final_html_reuses_the_live_renders_and_is_the_whole_rendering(tail):
    text = ANSWER.replace("[link](https://example.com/a?b=c)", "link") * 8
    live, grown, sent = LiveRender(), GrowingText(), []
    for piece in _pieces(text, 16):
        grown.add(piece)
        if live.due(len(grown)):
            sent.append(live.render_now(grown.since(live.settled))[0])
    whole = grown.text() + tail
    html, settled = await final_html(live, whole)
    assert html == render_markdown(whole)
    assert await final_html(None, whole) == (render_markdown(whole), 0)
    # the settled blocks the renders sent begin the whole HTML (a page that drew them needs the rest)
    assert settled == (0 if tail else len("".join(sent))) and html.startswith("".join(sent))
    parts = live.final(whole)
    if tail:  # a reference definition may serve a link in another part: rendered whole
        assert parts is None
    else:  # only the text after the settled blocks is rendered again
        assert parts is not None and len(parts[1]) < len(whole) // 10
