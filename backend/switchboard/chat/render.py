"""Markdown to sanitized HTML, on the server: model output never reaches the
page's DOM unsanitized.  Images are dropped: a remote image in model output
is a classic way to leak conversation data through its URL."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import nh3

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["render_markdown"]


@cache
def _markdown() -> MarkdownIt:
    """Built on the first answer, not at start-up (the parser's imports are not on the way to ready)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(["table", "strikethrough"])

_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "span",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
}


def render_markdown(text: str) -> str:
    html = _markdown().render(text)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
