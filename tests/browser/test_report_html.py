"""The HTML report dataviz writes, in real Chromium: it fits a narrow canvas (wide
tables scroll inside their own box) and follows the reader's light or dark scheme."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

MCP_DIR = Path(__file__).resolve().parents[2] / "backend" / "mcp"
if str(MCP_DIR) not in sys.path:
    sys.path.insert(0, str(MCP_DIR))

from dataviz._render import chart_png, report_html  # noqa: E402
from dataviz._table import parse_csv  # noqa: E402

WIDE_CSV = (
    "label,"
    + ",".join(f"column_with_a_long_name_{n}" for n in range(30))
    + "\n"
    + "averyveryverylongcellwithoutanyspaceatall" * 3
    + ","
    + ",".join(str(n * 1000.5) for n in range(30))
    + "\n"
    + "short,"
    + ",".join(str(n) for n in range(30))
    + "\n"
)


@pytest.fixture
def report() -> str:
    title = "A title that is much too long for a phone screen " + "x" * 120
    table = parse_csv(WIDE_CSV)
    png = chart_png(table.columns[0], table.numeric[:2], "bar", title)  # 900 px wide
    return report_html(table, title, "2 rows, 30 columns", png)


@pytest.mark.parametrize(("scheme", "dark"), [("light", False), ("dark", True)])
def test_the_report_fits_a_narrow_canvas_and_follows_the_color_scheme(browser, report, scheme, dark):
    context = browser.new_context(viewport={"width": 380, "height": 700}, color_scheme=scheme)
    try:
        page = context.new_page()
        page.set_content(report)
        sizes = page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
            " document.querySelector('table').parentElement.scrollWidth,"
            " document.querySelector('table').parentElement.clientWidth]"
        )
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        text = page.evaluate("() => getComputedStyle(document.body).color")
    finally:
        context.close()

    page_width, viewport_width, table_width, box_width = sizes
    assert page_width <= viewport_width, "the report is wider than the canvas"
    assert table_width > box_width  # the wide table scrolls inside its box
    level = sum(int(v) for v in background[background.index("(") + 1 : -1].split(",")[:3]) / 3
    assert (level < 80) is dark, (scheme, background, text)
