"""Build tool results in the V2 contract (docs/protocol.md, "Tool results")."""

from __future__ import annotations

import base64
from pathlib import PurePosixPath
from typing import Any

__all__ = ["artifact", "file_stem", "v2_result"]


def artifact(name: str, data: bytes, mime: str) -> dict[str, str]:
    """One V2 artifact: the host decodes, checks and stores it."""
    return {"name": name, "b64": base64.b64encode(data).decode("ascii"), "mime": mime}


def v2_result(
    results: dict[str, Any],
    *,
    artifacts: list[dict[str, str]] | None = None,
    display: dict[str, Any] | None = None,
    meta_data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A V2 result with only the keys that carry something."""
    out: dict[str, Any] = {"results": results}
    if artifacts:
        out["artifacts"] = artifacts
    if display:
        out["display"] = display
    if meta_data:
        out["meta_data"] = meta_data
    return out


def file_stem(name: str, default: str = "document") -> str:
    """A safe file stem from an upload's name: 'Q3 report.pdf' -> 'Q3 report'."""
    stem = PurePosixPath(name.replace("\\", "/")).stem
    cleaned = "".join(ch for ch in stem if ch.isalnum() or ch in " ._-").strip(" .")
    return cleaned[:100] or default
