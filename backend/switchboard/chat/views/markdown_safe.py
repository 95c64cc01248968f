"""Untrusted text made safe to open in any Markdown viewer (the Markdown export).

The page renders an answer with raw HTML as text and drops images (`render.py` allows no `img`):
a remote image loads by itself and carries data in its URL. A downloaded export is opened in
viewers that render raw HTML and load images, so the same text is neutralized at the source:

- an image, `![alt](url)`, becomes `\\![alt](url)`: a "!" and a link, which loads nothing;
- a `<` that could open HTML (a tag, comment, declaration) is escaped, and so is every `<` that
  starts a line (an HTML block of a viewer that renders HTML), even inside a code span;
- code blocks and code spans (as the page's parser reads them) stay as they are, except that
  code spans in tables are not trusted (a viewer splits a table row at `|` first);
- a fence the text leaves open is closed, so that what follows it is not read as its code.

Text shown verbatim (tool arguments, results) goes in a fence longer than any run of backticks
inside it (`fenced`), and a name inside inline code in a span delimited the same way (`code_span`)."""

from __future__ import annotations

import re

from .render import markdown_parser

__all__ = ["code_span", "fenced", "safe_inline", "safe_markdown"]

_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9.-]+)>")
_HTML_START = re.compile(r"[A-Za-z/!?]")
# Container markers a line may start with before a block (blockquote `>`, list items).
_LINE_START_LT = re.compile(r"^((?:[ \t]*(?:>|[-*+][ \t]|\d{1,9}[.)][ \t]))*[ \t]*)<", re.MULTILINE)
_BACKTICKS = re.compile(r"`+")


def safe_markdown(text: str) -> str:
    """`text` as Markdown that shows what the page shows, with nothing that loads by itself."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    lines = text.split("\n")
    kind = ["plain"] * len(lines)  # plain: scanned line by line, no code span trusted
    units: list[tuple[int, int]] = []
    open_fence = ""
    in_table = False
    for token in markdown_parser().parse(text):
        if token.type in ("table_open", "table_close"):
            in_table = token.type == "table_open"
        if token.map is None:
            continue
        start, end = token.map
        if token.type in ("fence", "code_block"):
            kind[start:end] = ["code"] * (end - start)
            if token.type == "fence" and token.level == 0 and not _closes(lines[end - 1], token.markup, end - start):
                open_fence = token.markup[0] * len(token.markup)
        elif token.type == "inline" and not in_table:
            units.append((start, end))
    out = list(lines)
    for start, end in units:
        if any(kind[i] != "plain" for i in range(start, end)):
            continue
        for i in range(start, end):
            kind[i] = "unit"
        out[start:end] = _scan("\n".join(lines[start:end]), trust_code=True).split("\n")
    for i, line in enumerate(lines):
        if kind[i] == "plain":
            out[i] = _scan(line, trust_code=False)
    for i in range(len(out)):
        if kind[i] != "code":
            out[i] = _LINE_START_LT.sub(r"\1\\<", out[i])
    result = "\n".join(out)
    return f"{result}\n{open_fence}" if open_fence else result


def safe_inline(text: str) -> str:
    """One line of untrusted text (a title, a file name, a reason) as safe Markdown."""
    return safe_markdown(" ".join(text.split()))


def fenced(text: str, info: str = "") -> str:
    """`text` verbatim in a backtick fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """`text` as inline code that no backtick inside it can end (one line)."""
    text = " ".join(text.split())
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _closes(line: str, markup: str, length: int) -> bool:
    stripped = line.strip()
    return length > 1 and len(stripped) >= len(markup) and set(stripped) == {markup[0]}


def _scan(text: str, *, trust_code: bool) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in _PUNCT:
            out.append(text[i : i + 2])
            i += 2
        elif c == "`":
            run = len(text) - len(text[i:].lstrip("`"))
            closing = re.compile(rf"(?<!`)`{{{run}}}(?!`)").search(text, i + run) if trust_code else None
            end = closing.end() if closing else i + run
            out.append(text[i:end])
            i = end
        elif c == "<":
            link = _AUTOLINK.match(text, i)
            if link:
                out.append(link.group())
                i = link.end()
                continue
            out.append("\\<" if i + 1 < n and _HTML_START.match(text[i + 1]) else "<")
            i += 1
        elif c == "!" and text.startswith("[", i + 1):
            out.append("\\!")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
