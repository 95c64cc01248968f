"""The interactive chart (an MCP App, `ui://dataviz/chart.html`): the series it draws, and
their re-aggregation by x value. The page itself is `chart_app.html`, self-contained."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from dataviz._table import Column, Table, _tidy

__all__ = ["APP_URI", "MAX_POINTS", "Aggregate", "app_html", "chart_data", "series"]

APP_URI = "ui://dataviz/chart.html"
MAX_POINTS = 2_000  # per series sent to the app; longer series are thinned evenly
Aggregate = Literal["none", "sum", "mean", "count", "min", "max"]
_HTML = Path(__file__).with_name("chart_app.html")


def app_html() -> str:
    return _HTML.read_text(encoding="utf-8")


def _thin(count: int) -> list[int]:
    if count <= MAX_POINTS:
        return list(range(count))
    step = count / MAX_POINTS
    return [int(i * step) for i in range(MAX_POINTS)]


def _value(value: float | None) -> float | int | None:
    return None if value is None else _tidy(value)


def series(table: Table, x: Column, y: Column, aggregate: Aggregate = "none") -> dict[str, Any]:
    """`{x, y, aggregate, labels, values}`: y by x, as the rows are or grouped by x value."""
    labels = [cell.strip() for cell in x.cells]
    numbers = y.numbers or [None] * len(labels)
    if aggregate != "none":
        groups: dict[str, list[float]] = {}
        for label, value in zip(labels, numbers, strict=True):
            bucket = groups.setdefault(label, [])
            if value is not None:
                bucket.append(value)
        labels = list(groups)
        numbers = [_combine(values, aggregate) for values in groups.values()]
    keep = _thin(len(labels))
    return {
        "x": x.name,
        "y": y.name,
        "aggregate": aggregate,
        "rows": table.rows,
        "labels": [labels[i] for i in keep],
        "values": [_value(numbers[i]) for i in keep],
    }


def _combine(values: list[float], aggregate: Aggregate) -> float | None:
    if aggregate == "count":
        return float(len(values))
    if not values:
        return None
    if aggregate == "sum":
        return sum(values)
    if aggregate == "mean":
        return sum(values) / len(values)
    return min(values) if aggregate == "min" else max(values)


def chart_data(table: Table, x: Column, y_cols: list[Column], kind: str, title: str) -> dict[str, Any]:
    """What the app draws first: every plotted series, and the columns it may switch to."""
    return {
        "title": title,
        "kind": kind,
        "x": x.name,
        "numeric": [c.name for c in table.numeric if c is not x],
        "series": [series(table, x, y) for y in y_cols],
    }
