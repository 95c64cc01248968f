"""Markdown to sanitized HTML, on the server: model output never reaches the
page's DOM unsanitized.  Images are dropped: a remote image in model output
is a classic way to leak conversation data through its URL."""

from __future__ import annotations

import asyncio
import re
from functools import cache
from typing import TYPE_CHECKING

import nh3

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it_pyrs import MarkdownIt as FastMarkdown

__all__ = ["INLINE_CHARS", "markdown_parser", "render_blocks", "render_markdown", "rendered"]

# Up to this length an answer renders in well under a millisecond (~40 µs for one sentence, ~0.3 ms for
# 256 characters of dense markdown): on the event loop, where a thread's hop alone costs ~0.1 ms of CPU.
INLINE_CHARS = 256


@cache
def markdown_parser() -> MarkdownIt:
    """The page's markdown as tokens (markdown-it-py, raw HTML as text): the export reads its block
    structure (`markdown_safe.py`). The page's HTML comes from `_fast()`, with the same rules."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


_ALIGN_CLASSES = {f"align-{side}" for side in ("left", "center", "right")}


_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "span",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "ol": {"start"},
}
_CELL_CLASSES = {"class": _ALIGN_CLASSES}


@cache
def _cleaner() -> nh3.Cleaner:
    """The sanitizer's rules, built once (``nh3.clean`` builds them on every call: 13 against 3 µs
    for a one-sentence answer)."""
    return nh3.Cleaner(
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        tag_attribute_values={"th": _CELL_CLASSES, "td": _CELL_CLASSES},
    )


@cache
def _fast() -> FastMarkdown:
    """The page's renderer: markdown-it's Rust port (markdown-it-pyrs) with the rules of
    `markdown_parser()` (CommonMark without raw HTML, tables, strikethrough) and the same HTML, at
    a tenth of the CPU (44 against 490 ms for 195 KiB): rendering was most of a long answer's cost
    to the server."""
    from markdown_it_pyrs import MarkdownIt

    # fmt: off
    return MarkdownIt("zero").enable_many([
        "blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "reference",
        "autolink", "backticks", "emphasis", "entity", "escape", "image", "link", "newline",
        "table", "strikethrough",
    ])
    # fmt: on


# Its only inline style: a table column's alignment, written as a class instead: the page's CSP
# applies no inline style, and reported each one it refused, which made parsing an answer with
# tables in the page ten times slower. Raw HTML in the text is escaped, so this matches only what
# the renderer wrote.
_ALIGN_STYLE = re.compile(r'<(th|td) style="text-align:(left|center|right)">')


def _html(text: str) -> str:
    return _ALIGN_STYLE.sub(r'<\1 class="align-\2">', _fast().render(text))


def render_markdown(text: str) -> str:
    return _cleaner().clean(_html(text))


def render_blocks(text: str) -> tuple[int, str, str]:
    """`text` rendered in two parts: its top-level blocks but the last, finished (more text cannot
    change them: a block ends only where the next one starts), and the last one, which may still
    grow. Returns (how many characters of `text` the first part covers, its HTML, the last block's
    HTML), both sanitized; together they are `render_markdown(text)`, but for a link whose
    reference is defined in the other part."""
    blocks = [node.srcmap for node in _fast().tree(text).children if node.srcmap]
    if len(blocks) < 2:
        return 0, "", render_markdown(text)
    raw = text.encode()
    line = raw.rfind(b"\n", 0, blocks[-1][0]) + 1  # the last block's line begins it (srcmap: bytes)
    chars = len(raw[:line].decode())
    return chars, render_markdown(text[:chars]), render_markdown(text[chars:])


async def rendered(text: str) -> str:
    """`render_markdown`, in a thread unless the text is short (longer answers take milliseconds)."""
    if len(text) <= INLINE_CHARS:
        return render_markdown(text)
    return await asyncio.to_thread(render_markdown, text)
