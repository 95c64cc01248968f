"""Draw a table as a PNG chart and write a standalone HTML report about it."""

from __future__ import annotations

import base64
import html
import io
from typing import Any, Literal

from dataviz._table import Column, Table

__all__ = ["ChartKind", "chart_png", "report_html"]

ChartKind = Literal["line", "bar", "scatter"]
_MAX_TICK_LABELS = 30
_PREVIEW_ROWS = 20


def chart_png(x: Column, ys: list[Column], kind: ChartKind, title: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure  # no pyplot: no global figure state

    fig = Figure(figsize=(9, 5), dpi=100, layout="constrained")
    ax = fig.subplots()
    categorical = kind == "bar" or not x.is_numeric
    positions = list(range(len(x.cells))) if categorical else _floats(x.numbers)
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    if kind == "line" and not categorical:
        positions = [positions[i] for i in order]  # a line over unsorted x would zigzag

    width = 0.8 / len(ys)
    for index, col in enumerate(ys):
        values = _floats(col.numbers)
        if kind == "line" and not categorical:
            values = [values[i] for i in order]
        if kind == "bar":
            offset = (index - (len(ys) - 1) / 2) * width
            ax.bar([p + offset for p in positions], values, width=width, label=col.name)
        elif kind == "line":
            ax.plot(positions, values, marker="o" if len(values) <= 50 else None, label=col.name)
        else:
            ax.scatter(positions, values, label=col.name, s=18)

    if categorical:
        step = max(1, -(-len(x.cells) // _MAX_TICK_LABELS))
        ticks = positions[::step]
        labels = [_short(c) for c in x.cells[::step]]
        if any(len(label) > 6 for label in labels):
            ax.set_xticks(ticks, labels, rotation=45, ha="right", rotation_mode="anchor")
        else:
            ax.set_xticks(ticks, labels)
    ax.set_xlabel(x.name)
    ax.set_ylabel(ys[0].name if len(ys) == 1 else "value")
    if len(ys) > 1:
        ax.legend()
    ax.grid(True, alpha=0.3)
    ax.set_title(title or _default_title(x, ys))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def report_html(table: Table, title: str, summary: str, png: bytes | None = None) -> str:
    """A standalone page: summary, the chart (inline), column statistics, the first rows."""
    esc = html.escape
    stat_keys = ["name", "type", "count", "missing", "min", "max", "mean", "distinct"]
    stats = [c.stats() for c in table.columns]
    preview = list(zip(*(c.cells[:_PREVIEW_ROWS] for c in table.columns), strict=True))
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>{esc(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p>{esc(summary)}</p>",
    ]
    if png is not None:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f'<img alt="{esc(title)}" src="data:image/png;base64,{data}">')
    stat_rows = ([s.get(k, "") for k in stat_keys] for s in stats)
    parts += ["<h2>Columns</h2>", _table_html(stat_keys, stat_rows)]
    parts += [
        f"<h2>First {len(preview)} of {table.rows:,} rows</h2>",
        _table_html(table.names, preview),
        "</body></html>",
    ]
    return "\n".join(parts)


def _table_html(header: list[str], rows: Any) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    # Wide tables scroll inside their own box instead of widening the page.
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _floats(numbers: list[float | None] | None) -> list[float]:
    return [float("nan") if v is None else v for v in numbers or []]


def _short(label: str, limit: int = 20) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _default_title(x: Column, ys: list[Column]) -> str:
    return f"{', '.join(c.name for c in ys)} by {x.name}"


# Fits any width (the canvas beside a chat, a phone) and follows the reader's light or
# dark scheme; the chart PNG keeps its white background in both.
_CSS = """
:root { color-scheme: light dark; }
*, *::before, *::after { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; padding: 1rem; max-width: 100%;
       color: #222; background: #fff; overflow-wrap: anywhere; }
h1, h2, p { max-width: 100%; }
img { display: block; max-width: 100%; height: auto; border: 1px solid #ddd; background: #fff; }
.scroll { max-width: 100%; overflow: auto; margin: 0.5rem 0 1.5rem; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; overflow-wrap: normal; }
td { max-width: 24rem; overflow-wrap: anywhere; }
th { background: #f3f3f3; }
@media (prefers-color-scheme: dark) {
  body { color: #e6e7ea; background: #141518; }  /* the chat page's own dark colours */
  img { border-color: #444; }
  th, td { border-color: #4a4d55; }
  th { background: #2a2d33; }
}
"""
