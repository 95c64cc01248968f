"""HTML artifacts that set no colours are served as supporting light and dark."""

from __future__ import annotations

import pytest

from switchboard.web.artifact_theme import follow_page_theme

META = b'<meta name="color-scheme" content="light dark">'


def test_an_unstyled_page_gets_the_colour_scheme_after_its_doctype():
    page = b"<!DOCTYPE html>\n<html><body><h1>Report</h1></body></html>"
    assert follow_page_theme(page) == b"<!DOCTYPE html>" + META + b"\n<html><body><h1>Report</h1></body></html>"
    assert follow_page_theme(b"<h1>Report</h1>") == META + b"<h1>Report</h1>"


@pytest.mark.parametrize("styled", [
    b"<style>body { color: #222 }</style><p>x</p>",
    b"<style>th { background: #f3f3f3 }</style><table></table>",
    b'<body bgcolor="white">x</body>',
    b'<meta name="color-scheme" content="light"><p>x</p>',
    b'<p style="color:red">x</p>',
])
def test_a_page_that_sets_its_own_colours_is_served_as_it_is(styled):
    assert follow_page_theme(styled) == styled


def test_border_colour_alone_is_not_a_colour_choice():
    page = b"<style>td { border-color: #ccc }</style><td>x</td>"
    assert follow_page_theme(page) == META + page
