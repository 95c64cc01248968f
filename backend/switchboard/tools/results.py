"""Turn an MCP CallToolResult into a ToolOutcome (the V2 contract).

A tool may return V2 (`results`, `artifacts`, `display`) as structured
content or as JSON text; image and embedded-resource blocks become
artifacts too; a plain text result stays valid.  The model never sees base64.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
from typing import Any
from urllib.parse import unquote, urlparse

import mcp_types

from .models import RawArtifact, ToolOutcome

__all__ = ["V2_KEYS", "add_resource_contents", "finish_text", "parse_result"]

V2_KEYS = frozenset({"results", "artifacts", "display"})


def _is_v2(value: Any) -> bool:
    return isinstance(value, dict) and bool(V2_KEYS.intersection(value))


def _name_from_uri(uri: str, mime: str | None, fallback: str) -> str:
    path = unquote(urlparse(str(uri)).path or "")
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not name:
        name = fallback + (mimetypes.guess_extension(mime or "") or "")
    return name


def _decode(b64: str) -> bytes:
    return base64.b64decode(b64, validate=True)


class _Collector:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.artifacts: list[RawArtifact] = []
        self.notes: list[str] = []

    def add(self, name: str, mime: str | None, data: bytes) -> None:
        if len(data) > self.max_bytes:
            self.notes.append(
                f"artifact '{name}' dropped: {len(data):,} bytes is over the {self.max_bytes:,}-byte limit"
            )
            return
        mime = mime or mimetypes.guess_type(name)[0] or "application/octet-stream"
        self.artifacts.append(RawArtifact(name=name, mime=mime, data=data))

    def add_b64(self, name: str, mime: str | None, b64: Any) -> None:
        if not isinstance(b64, str):
            self.notes.append(f"artifact '{name}' dropped: no base64 data")
            return
        try:
            self.add(name, mime, _decode(b64))
        except (binascii.Error, ValueError):
            self.notes.append(f"artifact '{name}' dropped: its data is not valid base64")


def _v2_artifacts(collector: _Collector, items: Any) -> None:
    if not isinstance(items, list):
        if items is not None:
            collector.notes.append("'artifacts' must be a list; ignored")
        return
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            collector.notes.append(f"artifacts[{i}] is not an object; ignored")
            continue
        name = str(item.get("name") or f"artifact-{i + 1}")
        mime = item.get("mime") or item.get("mime_type") or item.get("mimeType")
        if "b64" in item or "data" in item:
            collector.add_b64(name, mime, item.get("b64", item.get("data")))
        elif isinstance(item.get("text"), str):
            collector.add(name, mime or "text/plain", item["text"].encode())
        else:
            collector.notes.append(f"artifact '{name}' has neither 'b64' nor 'text'; ignored")


def add_resource_contents(outcome: ToolOutcome, name: str, contents: list[Any], max_artifact_bytes: int) -> None:
    """Artifacts from a resource read through the server (for resource links)."""
    collector = _Collector(max_artifact_bytes)
    for index, item in enumerate(contents):
        item_name = name if len(contents) == 1 else f"{index + 1}-{name}"
        if isinstance(item, mcp_types.TextResourceContents):
            collector.add(item_name, item.mime_type or "text/plain", item.text.encode())
        elif isinstance(item, mcp_types.BlobResourceContents):
            collector.add_b64(item_name, item.mime_type, item.blob)
    outcome.artifacts.extend(collector.artifacts)
    outcome.notes.extend(collector.notes)


def finish_text(outcome: ToolOutcome) -> None:
    """Tell the model which files were produced (never their bytes) and what was dropped."""
    text = outcome.text
    if outcome.artifacts:
        listing = ", ".join(f"{a.name} ({a.mime}, {len(a.data):,} bytes)" for a in outcome.artifacts)
        text = f"{text}\n[files produced and shown to the user: {listing}]".strip()
    if outcome.notes:
        text = f"{text}\n[" + "; ".join(outcome.notes) + "]"
    outcome.text = text


def parse_result(result: mcp_types.CallToolResult, *, max_artifact_bytes: int) -> ToolOutcome:
    collector = _Collector(max_artifact_bytes)
    texts: list[str] = []
    links: list[tuple[str, str]] = []
    v2: dict[str, Any] | None = result.structured_content if _is_v2(result.structured_content) else None
    for index, block in enumerate(result.content):
        if isinstance(block, mcp_types.TextContent):
            if block.text.lstrip().startswith("{"):
                try:
                    parsed = json.loads(block.text)
                except ValueError:
                    parsed = None
                if _is_v2(parsed):  # V2 as JSON text (or the text twin of structured content)
                    v2 = v2 if v2 is not None else parsed
                    continue
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
            ext = mimetypes.guess_extension(block.mime_type) or ""
            collector.add_b64(f"{kind}-{index + 1}{ext}", block.mime_type, block.data)
        elif isinstance(block, mcp_types.EmbeddedResource):
            res = block.resource
            name = _name_from_uri(str(res.uri), res.mime_type, f"resource-{index + 1}")
            if isinstance(res, mcp_types.TextResourceContents):
                collector.add(name, res.mime_type or "text/plain", res.text.encode())
            else:
                collector.add_b64(name, res.mime_type, res.blob)
        elif isinstance(block, mcp_types.ResourceLink):
            links.append((block.name, str(block.uri)))

    results: Any = None
    display: dict[str, Any] | None = None
    if v2 is not None:
        results = v2.get("results")
        _v2_artifacts(collector, v2.get("artifacts"))
        display = v2.get("display") if isinstance(v2.get("display"), dict) else None
        text = results if isinstance(results, str) else json.dumps(results, ensure_ascii=False, default=str)
        if texts:
            text = "\n".join([text, *texts])
    else:
        if result.structured_content is not None:
            results = result.structured_content
        text = "\n".join(texts)
        if not text and results is not None:
            text = json.dumps(results, ensure_ascii=False, default=str)
    return ToolOutcome(
        ok=not result.is_error,
        text=text,
        results=results,
        artifacts=collector.artifacts,
        display=display,
        notes=collector.notes,
        resource_links=links,
    )
