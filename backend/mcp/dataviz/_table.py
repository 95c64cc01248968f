"""Parse CSV text into typed columns and describe them."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from fastmcp.exceptions import ToolError

__all__ = ["Column", "Table", "parse_csv"]

MAX_ROWS = 200_000
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "-"})


@dataclass(frozen=True)
class Column:
    name: str
    cells: list[str]
    numbers: list[float | None] | None  # parsed values when every present cell is a number

    @property
    def is_numeric(self) -> bool:
        return self.numbers is not None

    def stats(self) -> dict[str, Any]:
        present = [c for c in self.cells if c.strip().lower() not in _MISSING]
        out: dict[str, Any] = {
            "name": self.name,
            "type": "number" if self.is_numeric else "text",
            "count": len(present),
            "missing": len(self.cells) - len(present),
        }
        if self.numbers is not None:
            values = [v for v in self.numbers if v is not None]
            out |= {
                "min": _tidy(min(values)),
                "max": _tidy(max(values)),
                "mean": _tidy(sum(values) / len(values)),
            }
        else:
            common = Counter(present).most_common(3)
            out |= {"distinct": len(set(present)), "top": [v for v, _ in common]}
        return out


@dataclass(frozen=True)
class Table:
    columns: list[Column]
    rows: int

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def numeric(self) -> list[Column]:
        return [c for c in self.columns if c.is_numeric]

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        for col in self.columns:  # forgive case and surrounding spaces
            if col.name.strip().lower() == name.strip().lower():
                return col
        raise ToolError(f"unknown column {name!r}; the columns are: {', '.join(self.names)}")

    def numeric_stats(self) -> dict[str, dict[str, Any]]:
        stats = (c.stats() for c in self.numeric)
        return {s["name"]: {k: s[k] for k in ("min", "max", "mean")} for s in stats}


def parse_csv(text: str) -> Table:
    """Parse CSV text with a header row; the delimiter (, ; tab |) is detected."""
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise ToolError("the CSV is empty")
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = csv.reader(io.StringIO(text), dialect, strict=True)
        records = [r for r in rows if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise ToolError(f"could not parse the CSV: {exc}") from None
    header, body = _header(records[0]), records[1:]
    if not body:
        raise ToolError("the CSV has a header row but no data rows")
    if len(body) > MAX_ROWS:
        raise ToolError(f"the CSV has {len(body):,} rows; the limit is {MAX_ROWS:,}")
    for number, record in enumerate(body, start=2):
        if len(record) != len(header):
            raise ToolError(
                f"row {number} has {len(record)} fields but the header has {len(header)}; "
                "check the delimiter and the quoting"
            )
    columns = [
        Column(name, cells, _numbers(cells))
        for name, cells in zip(header, (list(col) for col in zip(*body, strict=True)), strict=True)
    ]
    return Table(columns=columns, rows=len(body))


def _header(record: list[str]) -> list[str]:
    names: list[str] = []
    for index, raw in enumerate(record, start=1):
        name = raw.strip() or f"column_{index}"
        base, n = name, 2
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.append(name)
    return names


def _numbers(cells: list[str]) -> list[float | None] | None:
    values: list[float | None] = []
    for cell in cells:
        cell = cell.strip()
        if cell.lower() in _MISSING:
            values.append(None)
            continue
        try:
            value = float(cell)
        except ValueError:
            return None
        values.append(value if math.isfinite(value) else None)
    return values if any(v is not None for v in values) else None


def _tidy(value: float) -> float | int:
    return int(value) if value.is_integer() and abs(value) < 2**53 else round(value, 6)
