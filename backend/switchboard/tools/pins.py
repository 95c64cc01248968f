"""Tool definition pinning: the first definition (description, input schema,
annotations) seen of each tool is recorded; a later, different definition is
reported as changed, so the host can ask a person again before it runs
(protection against a server changing a tool after people came to trust it)."""

from __future__ import annotations

import hashlib
import json
import os
import logging
from pathlib import Path
from typing import Any

__all__ = ["ToolPins", "definition_hash"]

log = logging.getLogger("switchboard.tools")


def _definition(description: str, input_schema: dict[str, Any], annotations: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "input_schema": input_schema, "annotations": annotations}


def definition_hash(description: str, input_schema: dict[str, Any], annotations: dict[str, Any]) -> str:
    canonical = json.dumps(_definition(description, input_schema, annotations), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class ToolPins:
    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._pins: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                self._pins = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                log.warning("tool pins at %s are unreadable; starting afresh", path)
        self._reported: set[tuple[str, str]] = set()

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(f".{os.getpid()}.tmp")  # several app processes may share the file
        tmp.write_text(json.dumps(self._pins, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(self._path)

    def check(self, server: str, tool: str, description: str, input_schema: dict[str, Any],
              annotations: dict[str, Any]) -> tuple[str, bool]:  # fmt: skip
        """(hash, changed): pins a tool seen for the first time."""
        key = f"{server}/{tool}"
        digest = definition_hash(description, input_schema, annotations)
        pinned = self._pins.get(key)
        if pinned is None:
            self._pins[key] = {"hash": digest, "definition": _definition(description, input_schema, annotations)}
            self._save()
            return digest, False
        if pinned["hash"] == digest:
            return digest, False
        if (key, digest) not in self._reported:
            self._reported.add((key, digest))
            log.warning(
                "tool definition changed: %s",
                key,
                extra={"event": "tool_definition_changed", "tool": key, "old": pinned.get("definition"),
                       "new": _definition(description, input_schema, annotations)},  # fmt: skip
            )
        return digest, True

    def accept(self, server: str, tool: str, description: str, input_schema: dict[str, Any],
               annotations: dict[str, Any]) -> None:  # fmt: skip
        key = f"{server}/{tool}"
        self._pins[key] = {
            "hash": definition_hash(description, input_schema, annotations),
            "definition": _definition(description, input_schema, annotations),
        }
        self._save()
