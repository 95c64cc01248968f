"""The bundled MCP servers run as real stdio subprocesses (`python main.py` in their folder)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from pypdf import PdfWriter

SERVERS_DIR = Path(__file__).resolve().parents[2] / "backend" / "mcp"


def _client(name: str, log: Path, env: dict[str, str] | None = None) -> Client:
    transport = StdioTransport(
        sys.executable,
        ["main.py"],
        env=env,
        cwd=str(SERVERS_DIR / name),
        keep_alive=False,
        log_file=log,
    )
    return Client(transport, timeout=30)


async def test_pdfbasic_over_stdio(tmp_path):
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_blank_page(width=200, height=200)
    writer.add_metadata({"/Title": "Two blank pages"})
    buffer = io.BytesIO()
    writer.write(buffer)
    pdf = tmp_path / "blank.pdf"
    pdf.write_bytes(buffer.getvalue())
    log = tmp_path / "stderr.log"

    async with _client("pdfbasic", log, env={"PDFBASIC_ALLOW_LOCAL": "1"}) as client:
        tools = {t.name for t in await client.list_tools()}
        result = await client.call_tool("analyze_pdf", {"file_url": str(pdf)})

    assert tools == {"analyze_pdf", "extract_pdf_text"}, log.read_text()
    results = result.structured_content["results"]
    assert (results["pages"], results["words"], results["title"]) == (2, 0, "Two blank pages")
    assert "no text layer" in results["summary"]


async def test_dataviz_over_stdio(tmp_path):
    log = tmp_path / "stderr.log"
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with _client("dataviz", log, env={"DATAVIZ_TEST_TOOLS": "1"}) as client:
        tools = {t.name for t in await client.list_tools()}
        described = await client.call_tool("describe_csv", {"csv_text": "a,b\n1,x\n3,y\n"})
        counted = await client.call_tool("slow_count", {"n": 2, "delay_s": 0}, progress_handler=on_progress)

    assert tools == {"chart_csv", "describe_csv", "chart_series", "slow_count", "fail"}, log.read_text()
    assert described.structured_content["results"]["summary"] == "2 rows, 2 columns (1 numeric)"
    assert counted.content[0].text == "Counted to 2."
    assert progress == [1, 2]


async def test_dataviz_ships_without_its_test_tools(tmp_path):
    log = tmp_path / "stderr.log"
    async with _client("dataviz", log) as client:
        tools = {t.name for t in await client.list_tools()}

    assert tools == {"chart_csv", "describe_csv", "chart_series"}, log.read_text()
