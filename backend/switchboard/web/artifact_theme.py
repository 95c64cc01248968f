"""HTML artifacts that choose no colours follow the page's light or dark theme.

The canvas frames an artifact from an opaque origin, so the page's styles
cannot reach it: the only way for an unstyled document to turn dark is to
declare that it supports both schemes.  A document that sets any colour or
colour scheme of its own is served as it is (dark defaults under its light
colours would be unreadable)."""

from __future__ import annotations

import re

__all__ = ["follow_page_theme"]

_SCAN_BYTES = 512 * 1024
_STYLED = re.compile(rb"color-scheme|background|bgcolor|(?<![\w-])color\s*[:=]", re.IGNORECASE)
_DOCTYPE = re.compile(rb"\A(\xef\xbb\xbf)?\s*<!doctype[^>]*>", re.IGNORECASE)
_META = b'<meta name="color-scheme" content="light dark">'


def follow_page_theme(html: bytes) -> bytes:
    """The document with a colour-scheme declaration, unless it styles its colours."""
    if _STYLED.search(html[:_SCAN_BYTES]):
        return html
    doctype = _DOCTYPE.match(html)
    at = doctype.end() if doctype else 0  # after the doctype: anything before it would switch to quirks mode
    return html[:at] + _META + html[at:]
