"""HTML artifacts that set no colours are served as supporting light and dark."""

from __future__ import annotations

import pytest

from switchboard.web.sandbox.artifact_theme import follow_page_theme, quiet_network

META = b'<meta name="color-scheme" content="light dark">'


def test_an_unstyled_page_gets_the_colour_scheme_after_its_doctype():
    page = b"<!DOCTYPE html>\n<html><body><h1>Report</h1></body></html>"
    assert follow_page_theme(page) == b"<!DOCTYPE html>" + META + b"\n<html><body><h1>Report</h1></body></html>"
    assert follow_page_theme(b"<h1>Report</h1>") == META + b"<h1>Report</h1>"


@pytest.mark.parametrize(
    "styled",
    [
        b"<style>body { color: #222 }</style><p>x</p>",
        b"<style>th { background: #f3f3f3 }</style><table></table>",
        b'<body bgcolor="white">x</body>',
        b'<meta name="color-scheme" content="light"><p>x</p>',
        b'<p style="color:red">x</p>',
    ],
)
def test_a_page_that_sets_its_own_colours_is_served_as_it_is(styled):
    assert follow_page_theme(styled) == styled


def test_border_colour_alone_is_not_a_colour_choice():
    page = b"<style>td { border-color: #ccc }</style><td>x</td>"
    assert follow_page_theme(page) == META + page


NO_PREFETCH = b'<meta http-equiv="x-dns-prefetch-control" content="off">'


def test_dns_prefetching_is_off_first_and_resource_hints_are_taken_out():
    html = (
        b"<!DOCTYPE html><html><head>"
        b'<link rel="dns-prefetch" href="//a.leak.example">'
        b"<LINK REL=preconnect HREF=https://b.leak.example>"
        b"<link href='https://c.leak.example/x' rel='stylesheet prefetch'>"
        b'<link/rel="preload" as="image" href="https://d.leak.example/i.png">'
        b'<link rel="stylesheet" href="data:text/css,p{}">'
        b'</head><body><a href="https://e.leak.example/">a link</a></body></html>'
    )
    out = quiet_network(html)
    assert out.startswith(b"<!DOCTYPE html>" + NO_PREFETCH)
    for name in (b"a.leak", b"b.leak", b"c.leak", b"d.leak"):
        assert name not in out
    assert b'<link rel="stylesheet" href="data:text/css,p{}">' in out and b"e.leak.example" in out
    assert quiet_network(b"<p>no doctype</p>") == NO_PREFETCH + b"<p>no doctype</p>"


def test_frames_lose_their_address_and_refreshes_are_taken_out():
    html = (
        b'<meta http-equiv="Refresh" content="0; url=https://r.leak.example/">'
        b'<iframe src="https://f.leak.example/" width=10></iframe><EMBED SRC=https://e.leak.example/>'
        b'<object data="https://o.leak.example/"></object><img src="data:image/png;base64,AA==">'
    )
    out = quiet_network(html)
    assert b"Refresh" not in out
    assert b'<iframe data-blocked-src="https://f.leak.example/" width=10>' in out
    assert b"<EMBED data-blocked-SRC=https://e.leak.example/>" in out and b'<object data-blocked-data="https' in out
    assert b'<img src="data:image/png;base64,AA==">' in out  # not a frame: kept
