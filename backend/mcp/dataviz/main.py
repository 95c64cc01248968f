"""dataviz: charts and column statistics for CSV data (MCP over stdio).

Run from this folder: ``python main.py``. ``file_url`` must be a signed file link
of the host (on ``$SWITCHBOARD_FILES_ORIGIN``, else on localhost), and is never
followed through a redirect; set ``DATAVIZ_ALLOW_LOCAL=1`` to also accept
local absolute paths. ``DATAVIZ_TEST_TOOLS=1`` adds two tools for tests and demos
of the host (``slow_count``: progress and cancellation; ``fail``: a failed call);
they are not in the default catalogue.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

_MCP_DIR = str(Path(__file__).resolve().parents[1])  # backend/mcp: _common and this package
if _MCP_DIR not in sys.path:
    sys.path.insert(0, _MCP_DIR)

from _common import FetchedFile, artifact, fetch_file, local_files_allowed, v2_result  # noqa: E402
from dataviz._app import APP_URI, Aggregate, app_html, chart_data, series  # noqa: E402
from dataviz._render import ChartKind, chart_png, report_html  # noqa: E402
from dataviz._table import Table, parse_csv  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402
from fastmcp.apps.config import AppConfig  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402
from fastmcp.tools import ToolResult  # noqa: E402
from mcp_types import TextContent  # noqa: E402
from pydantic import Field  # noqa: E402

ALLOW_LOCAL_ENV = "DATAVIZ_ALLOW_LOCAL"
TEST_TOOLS_ENV = "DATAVIZ_TEST_TOOLS"
MAX_CSV_BYTES = 20 * 1024 * 1024

CsvText = Annotated[
    str | None,
    Field(description="The CSV data itself, with a header row. Give this or file_url."),
]
FileUrl = Annotated[
    str | None,
    Field(
        description="Link to an attached CSV file; the host fills it in with the file the "
        "user attached. Give this or csv_text."
    ),
]

mcp = FastMCP(
    "dataviz",
    instructions="Charts and column statistics for CSV data the user pastes or attaches.",
)


@mcp.tool(annotations={"readOnlyHint": True}, app=AppConfig(resource_uri=APP_URI))
async def chart_csv(
    csv_text: CsvText = None,
    file_url: FileUrl = None,
    x: Annotated[str | None, Field(description="Column for the x axis; default: the first column.")] = None,
    y: Annotated[
        list[str] | str | None,
        Field(description="Numeric column(s) to plot; default: every numeric column except x."),
    ] = None,
    kind: Annotated[ChartKind, Field(description="Chart type.")] = "bar",
    title: Annotated[str, Field(description="Chart title; default: 'y by x'.")] = "",
) -> ToolResult:
    """Draw a line, bar or scatter chart from CSV data (a header row is required) and
    write an HTML report with statistics for every column. The chart (chart.png) and the
    report (report.html) open beside the chat; you receive the columns, the row count and
    min/max/mean of each numeric column. Call describe_csv first if you do not know the
    column names."""
    table = await _load_table(csv_text, file_url)
    x_col = table.column(x) if x else table.columns[0]
    names = [y] if isinstance(y, str) else y
    if names:
        y_cols = [table.column(name) for name in names]
        for col in y_cols:
            if not col.is_numeric:
                numeric = ", ".join(c.name for c in table.numeric) or "none"
                raise ToolError(f"column {col.name!r} is not numeric; numeric columns: {numeric}")
    else:
        y_cols = [c for c in table.numeric if c is not x_col] or table.numeric
    if not y_cols:
        raise ToolError(f"the CSV has no numeric column to plot; the columns are: {', '.join(table.names)}")
    heading = title.strip() or f"{', '.join(c.name for c in y_cols)} by {x_col.name}"
    summary = (
        f"{kind} chart of {', '.join(c.name for c in y_cols)} by {x_col.name}: "
        f"{table.rows:,} rows, {len(table.columns)} columns"
    )
    png = await asyncio.to_thread(chart_png, x_col, y_cols, kind, heading)
    page = report_html(table, heading, summary, png)
    results = {
        "summary": summary,
        "columns": table.names,
        "rows": table.rows,
        "x": x_col.name,
        "y": [c.name for c in y_cols],
        "kind": kind,
        "stats": table.numeric_stats(),
    }
    out = v2_result(
        results,
        artifacts=[
            artifact("chart.png", png, "image/png"),
            artifact("report.html", page.encode("utf-8"), "text/html"),
        ],
        display={"open_canvas": True, "primary_file": "chart.png"},
    )
    # Hosts with MCP Apps show the interactive chart from `_meta` (the model never sees it);
    # others show chart.png and report.html.
    return ToolResult(
        content=[TextContent(type="text", text=json.dumps(out))],
        structured_content=out,
        meta={"dataviz/chart": chart_data(table, x_col, y_cols, kind, heading)},
    )


@mcp.tool(annotations={"readOnlyHint": True}, app=AppConfig(visibility=["app"]))
async def chart_series(
    y: Annotated[str, Field(description="The numeric column to give.")],
    csv_text: CsvText = None,
    file_url: FileUrl = None,
    x: Annotated[str | None, Field(description="The x column; default: the first column.")] = None,
    aggregate: Annotated[
        Aggregate, Field(description="Group rows with the same x value: none, sum, mean, count, min, max.")
    ] = "none",
) -> dict[str, Any]:
    """For the interactive chart (apps only): one numeric column by x, as the rows are or
    grouped by x value; at most 2,000 points (thinned evenly)."""
    table = await _load_table(csv_text, file_url)
    x_col = table.column(x) if x else table.columns[0]
    y_col = table.column(y)
    if not y_col.is_numeric:
        raise ToolError(f"column {y_col.name!r} is not numeric")
    return series(table, x_col, y_col, aggregate)


@mcp.resource(APP_URI, app=AppConfig(prefers_border=True))
def chart_app() -> str:
    """The interactive chart: zoom, hover, switch and group series (self-contained HTML)."""
    return app_html()


@mcp.tool(annotations={"readOnlyHint": True})
async def describe_csv(csv_text: CsvText = None, file_url: FileUrl = None) -> dict[str, Any]:
    """Describe CSV data (a header row is required): the row count and, per column, its
    type (number or text), how many values are present or missing, min/max/mean for
    numbers, and the distinct count and most common values for text."""
    table = await _load_table(csv_text, file_url)
    numeric = len(table.numeric)
    summary = f"{table.rows:,} rows, {len(table.columns)} columns ({numeric} numeric)"
    return v2_result({"summary": summary, "rows": table.rows, "columns": [c.stats() for c in table.columns]})


async def slow_count(
    ctx: Context,
    n: Annotated[int, Field(ge=1, le=1000, description="How far to count.")] = 5,
    delay_s: Annotated[float, Field(ge=0, le=10, description="Seconds to wait before each step.")] = 0.5,
) -> str:
    """Test/demo tool: counts from 1 to n slowly, reporting progress at every step. Use
    it only to try out progress display and cancellation; it does nothing useful."""
    for step in range(1, n + 1):
        await asyncio.sleep(delay_s)
        await ctx.report_progress(step, n, f"counted {step} of {n}")
    return f"Counted to {n}."


def fail(message: Annotated[str, Field(description="The error message to fail with.")]) -> str:
    """Test tool: always fails with the given message. Use it only to test how a failed
    tool call is shown; it does nothing else."""
    raise ToolError(message)


if os.environ.get(TEST_TOOLS_ENV, "").strip() == "1":
    mcp.tool(annotations={"readOnlyHint": True}, output_schema=None)(slow_count)
    mcp.tool(annotations={"readOnlyHint": True}, output_schema=None)(fail)


async def _load_table(csv_text: str | None, file_url: str | None) -> Table:
    csv_text, file_url = csv_text or None, (file_url or "").strip() or None
    if (csv_text is None) == (file_url is None):
        raise ToolError("give exactly one of csv_text (the data) or file_url (an attached file)")
    if file_url is not None:
        csv_text = _decode(
            await fetch_file(file_url, allow_local=local_files_allowed(ALLOW_LOCAL_ENV), max_bytes=MAX_CSV_BYTES)
        )
    return await asyncio.to_thread(parse_csv, csv_text or "")


def _decode(fetched: FetchedFile) -> str:
    if b"\x00" in fetched.data[:4096]:
        raise ToolError("the file is not a CSV text file; attach a .csv file")
    try:
        return fetched.data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return fetched.data.decode("cp1252", errors="replace")  # spreadsheet exports on Windows


if __name__ == "__main__":
    mcp.run(show_banner=False)
