"""pdfbasic: read and analyse PDF files attached to a conversation (MCP over stdio).

Run from this folder: ``python main.py``. ``file_url`` must be a signed file link
of the host (on ``$SWITCHBOARD_FILES_ORIGIN``, else on localhost), and is never
followed through a redirect; set ``PDFBASIC_ALLOW_LOCAL=1`` to also accept
local absolute paths (tests, local experiments).
"""

from __future__ import annotations

import asyncio
import io
import re
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

_MCP_DIR = str(Path(__file__).resolve().parents[1])  # backend/mcp, home of _common
if _MCP_DIR not in sys.path:
    sys.path.insert(0, _MCP_DIR)

from _common import artifact, fetch_file, file_stem, local_files_allowed, v2_result  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402
from pydantic import Field  # noqa: E402

if TYPE_CHECKING:  # pypdf loads with the first PDF: the server starts sooner without it
    from pypdf import PdfReader

ALLOW_LOCAL_ENV = "PDFBASIC_ALLOW_LOCAL"
MAX_ANALYZE_PAGES = 500
MAX_RESULT_CHARS = 20_000
TOP_WORDS = 10

_WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")  # don't, it’s, well-known
_STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)

FileUrl = Annotated[
    str,
    Field(
        description="The link to the PDF. The host fills this in with the file the user "
        "attached to the message; do not invent one."
    ),
]

mcp = FastMCP(
    "pdfbasic",
    instructions="Reads PDF files the user attached: metadata, word statistics and text.",
)


@mcp.tool(annotations={"readOnlyHint": True})
async def analyze_pdf(file_url: FileUrl, ctx: Context) -> dict[str, Any]:
    """Analyse an attached PDF: page count, word count, title, author and the most
    frequent words, with a one-line summary. Use it to answer "what is this PDF about /
    how long is it"; use extract_pdf_text when you need the actual wording."""
    fetched = await fetch_file(file_url, allow_local=local_files_allowed(ALLOW_LOCAL_ENV))
    reader = await asyncio.to_thread(_open_pdf, fetched.data)
    total = len(reader.pages)
    scanned = min(total, MAX_ANALYZE_PAGES)
    texts = await _page_texts(reader, scanned, ctx)
    words = [w for text in texts for w in _WORD.findall(text)]
    info = _document_info(reader)
    top = _top_words(words)
    results: dict[str, Any] = {
        "summary": _summary(total, len(words), info, top),
        "pages": total,
        "words": len(words),
        "title": info.get("title"),
        "author": info.get("author"),
        "top_words": top,
    }
    if scanned < total:
        results["note"] = f"word statistics cover the first {scanned} of {total} pages"
    meta = {"file_name": fetched.name, "size_bytes": len(fetched.data), **info}
    return v2_result(results, meta_data=meta)


@mcp.tool(annotations={"readOnlyHint": True})
async def extract_pdf_text(
    file_url: FileUrl,
    ctx: Context,
    max_pages: Annotated[int, Field(ge=1, le=2000, description="Extract at most this many pages, from page 1.")] = 20,
) -> dict[str, Any]:
    """Extract the plain text of an attached PDF, page by page (up to max_pages). The
    text is returned to you (cut when very long) and saved as a .txt file the user can
    open. Scanned PDFs without a text layer give little or no text (no OCR)."""
    fetched = await fetch_file(file_url, allow_local=local_files_allowed(ALLOW_LOCAL_ENV))
    reader = await asyncio.to_thread(_open_pdf, fetched.data)
    total = len(reader.pages)
    count = min(total, max_pages)
    texts = await _page_texts(reader, count, ctx)
    full = "\n\n".join(f"--- page {n} ---\n{text.strip()}" for n, text in enumerate(texts, 1))
    txt_name = f"{file_stem(fetched.name)}.txt"
    results: dict[str, Any] = {
        "summary": f"text of {count} of {total} pages, {len(full):,} characters",
        "pages": total,
        "pages_extracted": count,
        "characters": len(full),
        "text": _cut(full, txt_name),
    }
    if count < total:
        results["note"] = f"extracted the first {count} of {total} pages; call again with a larger max_pages for more"
    return v2_result(
        results,
        artifacts=[artifact(txt_name, full.encode("utf-8"), "text/plain")],
        display={"open_canvas": True, "primary_file": txt_name},
        meta_data={"file_name": fetched.name, "size_bytes": len(fetched.data)},
    )


def _open_pdf(data: bytes) -> PdfReader:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    if b"%PDF-" not in data[:1024]:
        raise ToolError("the file is not a PDF; attach a PDF file")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolError("the PDF is password-protected; attach an unprotected copy")
        len(reader.pages)  # parses the page tree: a broken one fails here, not later
    except PyPdfError as exc:
        raise ToolError(f"could not read the PDF ({exc}); it may be damaged") from None
    return reader


async def _page_texts(reader: PdfReader, count: int, ctx: Context) -> list[str]:
    """The text of the first ``count`` pages; extraction runs in a thread, one page at a time."""
    from pypdf.errors import PyPdfError

    texts: list[str] = []
    for index in range(count):
        try:
            text = await asyncio.to_thread(reader.pages[index].extract_text)
        except (PyPdfError, ValueError, KeyError, TypeError):
            text = ""  # one malformed page should not lose the rest of the document
        texts.append(text)
        await ctx.report_progress(index + 1, count, f"page {index + 1} of {count}")
    return texts


def _document_info(reader: PdfReader) -> dict[str, str | None]:
    meta = reader.metadata or {}
    keys = {
        "title": "/Title",
        "author": "/Author",
        "subject": "/Subject",
        "creator": "/Creator",
        "producer": "/Producer",
        "created": "/CreationDate",
    }
    info: dict[str, str | None] = {}
    for name, key in keys.items():
        value = str(meta[key]).strip() if key in meta else ""
        info[name] = value or None
    return info


def _top_words(words: list[str]) -> list[dict[str, Any]]:
    counts = Counter(w.lower() for w in words if len(w) > 2 and w.isalpha() and w.lower() not in _STOPWORDS)
    return [{"word": word, "count": n} for word, n in counts.most_common(TOP_WORDS)]


def _summary(pages: int, words: int, info: dict[str, str | None], top: list[dict]) -> str:
    parts = [f"{pages:,} page{'s' if pages != 1 else ''}, {words:,} words"]
    if words == 0:
        parts[0] += " (no text layer: the PDF may be scanned images)"
    if info.get("title"):
        parts.append(f"title: {info['title']}")
    if info.get("author"):
        parts.append(f"author: {info['author']}")
    if top:
        parts.append("frequent words: " + ", ".join(t["word"] for t in top[:5]))
    return "; ".join(parts)


def _cut(text: str, full_name: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return (
        text[:MAX_RESULT_CHARS] + f"\n\n[cut: showing {MAX_RESULT_CHARS:,} of {len(text):,} characters; "
        f"the full text is in {full_name}]"
    )


if __name__ == "__main__":
    mcp.run(show_banner=False)
