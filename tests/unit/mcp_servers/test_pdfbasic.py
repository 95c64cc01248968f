"""The bundled pdfbasic server, in memory, reading PDFs served over real HTTP."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fastmcp import Client

REPORT_PAGES = [
    "Quarterly report\nApples sold well this quarter.\nApples and pears.",
    "Page two talks about apples, bananas and pears.",
    "The end. Apples again.",
]


@pytest.fixture
async def client(pdfbasic_mcp):
    async with Client(pdfbasic_mcp) as c:
        yield c


def _v2(result: Any) -> dict[str, Any]:
    """The structured content, checked to be the same JSON as the text content."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def test_lists_two_read_only_tools(client):
    tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == {"analyze_pdf", "extract_pdf_text"}
    for tool in tools.values():
        assert tool.annotations.read_only_hint is True
        assert len(tool.description) > 60
        assert tool.input_schema["required"] == ["file_url"]
    assert tools["extract_pdf_text"].input_schema["properties"]["max_pages"]["default"] == 20


async def test_analyze_pdf_over_http(client, file_server, make_pdf):
    pdf = make_pdf(REPORT_PAGES, {"Title": "Q3 Report", "Author": "Ada Lovelace"})
    url = file_server.add("f42", pdf, "application/pdf", "q3 report.pdf")

    out = _v2(await client.call_tool("analyze_pdf", {"file_url": url}))

    results = out["results"]
    assert results["pages"] == 3
    assert results["words"] == 22
    assert (results["title"], results["author"]) == ("Q3 Report", "Ada Lovelace")
    assert results["top_words"][0] == {"word": "apples", "count": 4}
    assert "3 pages, 22 words" in results["summary"]
    assert "Q3 Report" in results["summary"]
    assert out["meta_data"]["file_name"] == "q3 report.pdf"
    assert out["meta_data"]["size_bytes"] == len(pdf)
    assert "artifacts" not in out


async def test_extract_text_gives_text_artifact_and_progress(client, file_server, make_pdf):
    url = file_server.add("q", make_pdf(REPORT_PAGES), "application/pdf", "Quarterly Report.pdf")
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    result = await client.call_tool("extract_pdf_text", {"file_url": url}, progress_handler=on_progress)

    out = _v2(result)
    assert progress == [(1, 3), (2, 3), (3, 3)]
    text = out["results"]["text"]
    assert out["results"]["pages"] == out["results"]["pages_extracted"] == 3
    assert out["results"]["summary"] == f"text of 3 of 3 pages, {len(text):,} characters"
    assert "--- page 2 ---\nPage two talks about apples" in text
    [art] = out["artifacts"]
    assert (art["name"], art["mime"]) == ("Quarterly Report.txt", "text/plain")
    assert base64.b64decode(art["b64"]).decode() == text
    assert out["display"] == {"open_canvas": True, "primary_file": "Quarterly Report.txt"}


async def test_extract_stops_at_max_pages(client, file_server, make_pdf):
    url = file_server.add("doc", make_pdf(REPORT_PAGES), "application/pdf")

    results = _v2(await client.call_tool("extract_pdf_text", {"file_url": url, "max_pages": 1}))["results"]

    assert (results["pages"], results["pages_extracted"]) == (3, 1)
    assert "page 2" not in results["text"]
    assert "first 1 of 3 pages" in results["note"]


async def test_long_text_is_cut_for_the_model_but_whole_in_the_artifact(client, file_server, make_pdf):
    line = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
    pages = ["\n".join(f"{n} {line}" for n in range(90)) for _ in range(4)]
    url = file_server.add("long", make_pdf(pages), "application/pdf", "long.pdf")

    out = _v2(await client.call_tool("extract_pdf_text", {"file_url": url}))

    full = base64.b64decode(out["artifacts"][0]["b64"]).decode()
    assert len(full) > 25_000
    assert out["results"]["characters"] == len(full)
    assert out["results"]["text"].startswith(full[:20_000])
    assert out["results"]["text"].endswith(
        f"[cut: showing 20,000 of {len(full):,} characters; the full text is in long.txt]"
    )


async def test_expired_link_says_attach_again(client, file_server):
    url = file_server.url("expired")

    result = await client.call_tool("analyze_pdf", {"file_url": url}, raise_on_error=False)

    assert result.is_error
    assert result.content[0].text == ("the file link expired or is invalid (HTTP 403); attach the file again")


async def test_not_a_pdf(client, file_server):
    url = file_server.add("page", b"<html>login</html>", "text/html")

    result = await client.call_tool("extract_pdf_text", {"file_url": url}, raise_on_error=False)

    assert result.is_error
    assert "not a PDF" in result.content[0].text


async def test_damaged_pdf(client, file_server):
    url = file_server.add("damaged", b"%PDF-1.4\n1 0 obj garbage", "application/pdf")

    result = await client.call_tool("analyze_pdf", {"file_url": url}, raise_on_error=False)

    assert result.is_error
    assert "could not read the PDF" in result.content[0].text


async def test_local_path_refused_unless_allowed(client, tmp_path, monkeypatch, make_pdf):
    path = tmp_path / "local.pdf"
    path.write_bytes(make_pdf(["one local page"], {"Title": "Local"}))
    monkeypatch.delenv("PDFBASIC_ALLOW_LOCAL", raising=False)

    refused = await client.call_tool("analyze_pdf", {"file_url": str(path)}, raise_on_error=False)
    monkeypatch.setenv("PDFBASIC_ALLOW_LOCAL", "1")
    allowed = await client.call_tool("analyze_pdf", {"file_url": str(path)})

    assert refused.is_error
    assert "local file paths are not accepted" in refused.content[0].text
    assert _v2(allowed)["results"]["title"] == "Local"
    assert _v2(allowed)["meta_data"]["file_name"] == "local.pdf"


async def test_other_schemes_refused(client):
    result = await client.call_tool("analyze_pdf", {"file_url": "ftp://example.com/a.pdf"}, raise_on_error=False)

    assert result.is_error
    assert "expected the http(s) URL" in result.content[0].text
