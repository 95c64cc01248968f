"""Markdown to sanitized HTML, on the server: model output never reaches the
page's DOM unsanitized.  Images are dropped: a remote image in model output
is a classic way to leak conversation data through its URL."""

from __future__ import annotations

import asyncio
import re
from functools import cache
from typing import TYPE_CHECKING, Any

import nh3

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["INLINE_CHARS", "markdown_parser", "render_blocks", "render_markdown", "rendered"]

# Up to this length an answer renders in well under a millisecond (~40 µs for one sentence, ~0.3 ms for
# 256 characters of dense markdown): on the event loop, where a thread's hop alone costs ~0.1 ms of CPU.
INLINE_CHARS = 256


@cache
def markdown_parser() -> MarkdownIt:
    """The page's parser (raw HTML is text), built on the first answer, not at start-up (its imports
    are not on the way to ready). The export reads the same block structure (`export_safe`)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )
    md.core.ruler.push("align_classes", _align_classes)
    return md


_ALIGN = {f"text-align:{side}": f"align-{side}" for side in ("left", "center", "right")}


def _align_classes(state: Any) -> None:
    """A table column's alignment as a class (`align-right`), not the style attribute the parser
    writes: the page's CSP applies no inline style, and each one it refuses is a violation
    report, which made parsing an answer with tables in the page ten times slower."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open") and token.attrs:
            side = _ALIGN.get(str(token.attrs.pop("style", "")))
            if side:
                token.attrs["class"] = side


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
_CELL_CLASSES = {"class": set(_ALIGN.values())}


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


def render_markdown(text: str) -> str:
    return _cleaner().clean(markdown_parser().render(text))


_NEWLINE = re.compile(r"\r\n?|\n")  # the line breaks the parser counts lines by


def render_blocks(text: str) -> tuple[int, str, str]:
    """`text` rendered in two parts: its top-level blocks but the last, finished (more text cannot
    change them: a block ends only where the next one starts), and the last one, which may still
    grow. Returns (how many characters of `text` the first part covers, its HTML, the last block's
    HTML), both sanitized; together they are `render_markdown(text)`, but for a link whose
    reference is defined in another part."""
    md, env = markdown_parser(), dict[str, Any]()
    tokens = md.parse(text, env)
    starts = [i for i, token in enumerate(tokens) if token.level == 0 and token.nesting >= 0 and token.map]
    if len(starts) < 2:
        return 0, "", _cleaner().clean(md.renderer.render(tokens, md.options, env))
    last = starts[-1]
    line, offset = tokens[last].map[0], 0  # type: ignore[index]  # (`starts` has only tokens with a map)
    for count, newline in enumerate(_NEWLINE.finditer(text), 1):
        if count == line:
            offset = newline.end()
            break
    done = md.renderer.render(tokens[:last], md.options, env)
    return offset, _cleaner().clean(done), _cleaner().clean(md.renderer.render(tokens[last:], md.options, env))


async def rendered(text: str) -> str:
    """`render_markdown`, in a thread unless the text is short (longer answers take milliseconds)."""
    if len(text) <= INLINE_CHARS:
        return render_markdown(text)
    return await asyncio.to_thread(render_markdown, text)
