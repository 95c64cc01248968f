"""The bundled dataviz server, in memory; CSV files come over real HTTP."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fastmcp import Client

SALES = """\
month,sales,cost,region
Jan,10,5,north
Feb,12.5,6,<script>alert(1)</script>
Mar,,7,north
"""


@pytest.fixture
async def client(dataviz_mcp):
    async with Client(dataviz_mcp) as c:
        yield c


def _v2(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def _artifacts(out: dict[str, Any]) -> dict[str, tuple[str, bytes]]:
    return {a["name"]: (a["mime"], base64.b64decode(a["b64"])) for a in out["artifacts"]}


async def _error(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments, raise_on_error=False)
    assert result.is_error
    return result.content[0].text


async def test_tools_and_annotations(client):
    tools = {t.name: t for t in await client.list_tools()}

    assert set(tools) == {"chart_csv", "describe_csv", "chart_series"}  # the test tools are not shipped
    assert tools["chart_csv"].meta["ui"]["resourceUri"] == "ui://dataviz/chart.html"
    assert tools["chart_series"].meta["ui"]["visibility"] == ["app"]  # only the chart app calls it
    for name in ("chart_csv", "describe_csv", "chart_series"):
        assert tools[name].annotations.read_only_hint is True
    kinds = tools["chart_csv"].input_schema["properties"]["kind"]
    assert kinds["enum"] == ["line", "bar", "scatter"]
    assert kinds["default"] == "bar"


async def test_chart_from_csv_text(client):
    out = _v2(await client.call_tool("chart_csv", {"csv_text": SALES, "title": "Sales <2024>"}))

    results = out["results"]
    assert results["columns"] == ["month", "sales", "cost", "region"]
    assert results["rows"] == 3
    assert (results["x"], results["y"], results["kind"]) == ("month", ["sales", "cost"], "bar")
    assert results["stats"] == {
        "sales": {"min": 10, "max": 12.5, "mean": 11.25},
        "cost": {"min": 5, "max": 7, "mean": 6},
    }
    assert out["display"] == {"open_canvas": True, "primary_file": "chart.png"}
    files = _artifacts(out)
    assert files["chart.png"][0] == "image/png"
    assert files["chart.png"][1].startswith(b"\x89PNG\r\n\x1a\n")
    mime, page = files["report.html"]
    assert mime == "text/html"
    html = page.decode()
    assert html.startswith("<!doctype html>")
    assert "<title>Sales &lt;2024&gt;</title>" in html
    assert "<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in html
    assert "<script>" not in html
    assert "data:image/png;base64," in html


async def test_chart_from_file_url_with_chosen_columns(client, file_server):
    csv = "x;y;label\n3;9;c\n1;1;a\n2;4;b\n"  # semicolons, unsorted x
    url = file_server.add("f7", csv.encode(), "text/csv", "squares.csv")

    out = _v2(await client.call_tool("chart_csv", {"file_url": url, "x": "x", "y": "y", "kind": "line"}))

    assert out["results"]["columns"] == ["x", "y", "label"]
    assert (out["results"]["x"], out["results"]["y"]) == ("x", ["y"])
    assert out["results"]["stats"] == {
        "x": {"min": 1, "max": 3, "mean": 2},
        "y": {"min": 1, "max": 9, "mean": 4.666667},
    }
    assert set(_artifacts(out)) == {"chart.png", "report.html"}


async def test_scatter(client):
    csv = "height,weight\n" + "".join(f"{150 + i},{50 + i * 0.7}\n" for i in range(40))

    out = _v2(await client.call_tool("chart_csv", {"csv_text": csv, "kind": "scatter"}))

    assert (out["results"]["x"], out["results"]["y"]) == ("height", ["weight"])
    assert _artifacts(out)["chart.png"][1].startswith(b"\x89PNG")


async def test_unknown_column_lists_the_columns(client):
    message = await _error(client, "chart_csv", {"csv_text": SALES, "y": ["profit"]})

    assert message == "unknown column 'profit'; the columns are: month, sales, cost, region"


async def test_text_column_cannot_be_plotted(client):
    message = await _error(client, "chart_csv", {"csv_text": SALES, "y": ["region"]})

    assert message == "column 'region' is not numeric; numeric columns: sales, cost"


async def test_no_numeric_column(client):
    message = await _error(client, "chart_csv", {"csv_text": "name,city\nAda,London\n"})

    assert message.startswith("the CSV has no numeric column to plot")
    assert "name, city" in message


@pytest.mark.parametrize(
    ("csv_text", "expected"),
    [
        ("a,b\n1,2\n3,4,5\n", "row 3 has 3 fields but the header has 2"),
        ("a,b\n", "the CSV has a header row but no data rows"),
        ("  \n", "the CSV is empty"),
        ('a,b\n1,"2\n', "could not parse the CSV"),
    ],
)
async def test_bad_csv(client, csv_text, expected):
    assert expected in await _error(client, "describe_csv", {"csv_text": csv_text})


async def test_needs_exactly_one_source(client):
    both = await _error(client, "chart_csv", {"csv_text": SALES, "file_url": "http://x/y.csv"})
    neither = await _error(client, "chart_csv", {})

    expected = "give exactly one of csv_text (the data) or file_url (an attached file)"
    assert both == neither == expected


async def test_expired_file_url(client, file_server):
    message = await _error(client, "describe_csv", {"file_url": file_server.url("expired")})

    assert message == "the file link expired or is invalid (HTTP 403); attach the file again"


async def test_binary_file_refused(client, file_server):
    url = file_server.add("data", b"PK\x03\x04\x00\x00binary", "application/zip")

    assert "not a CSV text file" in await _error(client, "describe_csv", {"file_url": url})


async def test_describe_csv_gives_results_only(client):
    out = _v2(await client.call_tool("describe_csv", {"csv_text": SALES}))

    assert set(out) == {"results"}
    results = out["results"]
    assert results["summary"] == "3 rows, 4 columns (2 numeric)"
    by_name = {c["name"]: c for c in results["columns"]}
    assert by_name["sales"] == {
        "name": "sales",
        "type": "number",
        "count": 2,
        "missing": 1,
        "min": 10,
        "max": 12.5,
        "mean": 11.25,
    }
    assert by_name["region"]["type"] == "text"
    assert by_name["region"]["distinct"] == 2
    assert by_name["region"]["top"][0] == "north"


@pytest.fixture
async def test_tools_client(dataviz_test_tools_mcp):
    async with Client(dataviz_test_tools_mcp) as c:
        yield c


async def test_the_test_tools_come_only_with_dataviz_test_tools(test_tools_client):
    tools = {t.name: t for t in await test_tools_client.list_tools()}

    assert set(tools) == {"chart_csv", "describe_csv", "chart_series", "slow_count", "fail"}
    assert tools["slow_count"].annotations.read_only_hint is True
    assert tools["slow_count"].description.startswith("Test/demo tool")
    assert tools["fail"].description.startswith("Test tool")


async def test_slow_count_reports_every_step(test_tools_client):
    client = test_tools_client
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    result = await client.call_tool("slow_count", {"n": 3, "delay_s": 0.01}, progress_handler=on_progress)

    assert progress == [(n, 3, f"counted {n} of 3") for n in (1, 2, 3)]
    assert result.structured_content is None
    assert [c.text for c in result.content] == ["Counted to 3."]


async def test_fail_is_a_tool_error(test_tools_client):
    assert await _error(test_tools_client, "fail", {"message": "disk on fire"}) == "disk on fire"


async def test_the_chart_result_carries_the_interactive_charts_data_beside_the_v2_result(client):
    result = await client.call_tool("chart_csv", {"csv_text": SALES, "y": ["sales"], "kind": "line"})

    assert "chart.png" in {a["name"] for a in _v2(result)["artifacts"]}  # clients without apps keep the V2 files
    chart = result.meta["dataviz/chart"]
    assert (chart["x"], chart["kind"], chart["numeric"]) == ("month", "line", ["sales", "cost"])
    assert chart["series"] == [
        {
            "x": "month",
            "y": "sales",
            "aggregate": "none",
            "rows": 3,
            "labels": ["Jan", "Feb", "Mar"],
            "values": [10, 12.5, None],
        }
    ]


async def test_chart_series_switches_and_groups_a_series_for_the_app(client):
    rows = "day,kind,amount\n1,a,2\n1,b,3\n2,a,5\n"
    out = (
        await client.call_tool("chart_series", {"csv_text": rows, "y": "amount", "aggregate": "sum"})
    ).structured_content
    assert (out["labels"], out["values"]) == (["1", "2"], [5, 5])
    out = (
        await client.call_tool("chart_series", {"csv_text": rows, "y": "amount", "aggregate": "count"})
    ).structured_content
    assert out["values"] == [2, 1]
    assert "not numeric" in await _error(client, "chart_series", {"csv_text": rows, "y": "kind"})


async def test_the_chart_app_is_self_contained_and_speaks_the_bridge(client):
    contents = await client.read_resource("ui://dataviz/chart.html")
    html = contents[0].text

    assert contents[0].mime_type == "text/html;profile=mcp-app"
    assert "ui/initialize" in html and "ui/notifications/tool-result" in html and '"tools/call"' in html
    assert "chart_series" in html
    assert "<script src" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
