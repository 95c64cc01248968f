"""HTML artifacts as the canvas gets them: no name lookups or early connections of their own
(`quiet_network`), and, when they choose no colours, the page's light or dark theme.

The canvas frames an artifact from an opaque origin, so the page's styles
cannot reach it: the only way for an unstyled document to turn dark is to
declare that it supports both schemes.  A document that sets any colour or
colour scheme of its own is served as it is (dark defaults under its light
colours would be unreadable)."""

from __future__ import annotations

import re

__all__ = ["follow_page_theme", "quiet_network"]

_SCAN_BYTES = 512 * 1024
_STYLED = re.compile(rb"color-scheme|background|bgcolor|(?<![\w-])color\s*[:=]", re.IGNORECASE)
_DOCTYPE = re.compile(rb"\A(\xef\xbb\xbf)?\s*<!doctype[^>]*>", re.IGNORECASE)
_META = b'<meta name="color-scheme" content="light dark">'


# Chromium resolves names (and opens connections) for these hints and for links even where the
# CSP blocks every fetch; a script-less artifact could use them as a read receipt.
_HINT_RELS = frozenset(
    {b"dns-prefetch", b"preconnect", b"prefetch", b"prerender", b"preload", b"modulepreload", b"next"}
)
_LINK = re.compile(rb"<link\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE)
_REL = re.compile(rb"[\s/]rel\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", re.IGNORECASE)
_NO_PREFETCH = b'<meta http-equiv="x-dns-prefetch-control" content="off">'


# A frame the CSP blocks is still looked up and connected to by Chromium (measured: two
# connections for one `<iframe src>`), and a refresh navigates the artifact's own frame, which
# no CSP governs: frames lose their address, refreshes go.
_FRAME = re.compile(
    rb"<(?:iframe|frame|embed|object|portal|fencedframe)\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE
)
_FRAME_SOURCE = re.compile(rb"([\s/])(src|srcdoc|data)(\s*=)", re.IGNORECASE)
_META_TAG = re.compile(rb"<meta\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE)
_REFRESH = re.compile(rb"[\s/]http-equiv\s*=\s*[\"']?\s*refresh", re.IGNORECASE)


def _frame(tag: re.Match[bytes]) -> bytes:
    return _FRAME_SOURCE.sub(rb"\1data-blocked-\2\3", tag.group(0))


def _refresh(tag: re.Match[bytes]) -> bytes:
    return b"" if _REFRESH.search(tag.group(0)) else tag.group(0)


def _hint(tag: re.Match[bytes]) -> bytes:
    rel = _REL.search(tag.group(0))
    tokens = set((next(g for g in rel.groups() if g is not None) if rel else b"").lower().split())
    return b"" if tokens & _HINT_RELS else tag.group(0)


def quiet_network(html: bytes) -> bytes:
    """The document with DNS prefetching turned off before anything else, its resource hints
    (`<link rel=dns-prefetch|preconnect|prefetch|prerender|preload...>`) and refreshes taken out,
    and its frames' and embeds' addresses (`src`, `srcdoc`, `data`) renamed `data-blocked-*`."""
    html = _META_TAG.sub(_refresh, _FRAME.sub(_frame, _LINK.sub(_hint, html)))
    doctype = _DOCTYPE.match(html)
    at = doctype.end() if doctype else 0
    return html[:at] + _NO_PREFETCH + html[at:]


def follow_page_theme(html: bytes) -> bytes:
    """The document with a colour-scheme declaration, unless it styles its colours."""
    if _STYLED.search(html[:_SCAN_BYTES]):
        return html
    doctype = _DOCTYPE.match(html)
    at = doctype.end() if doctype else 0  # after the doctype: anything before it would switch to quirks mode
    return html[:at] + _META + html[at:]
