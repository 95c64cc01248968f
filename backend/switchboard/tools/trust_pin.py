"""A tool's pin, and what an administrator reviewing a definition needs to see.

The pin is sha256 of the RFC 8785 canonical JSON of everything a server tells the model about a
tool: its name, title, description, input and output schemas, annotations and `_meta.ui`, plus the
server's `instructions`. `diff` compares two definitions field by field; `flags` finds characters
a person cannot see but a model reads: Unicode tags (U+E0000-E007F, which spell hidden ASCII),
zero-width and bidirectional controls, and words mixing homoglyph-prone scripts."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types
import rfc8785

__all__ = ["FIELDS", "Flag", "canonical", "diff", "flags", "legacy_hash", "pin_of", "tool_definition"]

FIELDS = (
    "name",
    "title",
    "description",
    "input_schema",
    "output_schema",
    "annotations",
    "meta_ui",
    "instructions",
)

_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE")
_WORD = re.compile(r"\w+")


def tool_definition(tool: mcp_types.Tool, instructions: str | None) -> dict[str, Any]:
    """The pinned fields of a listed tool, as JSON values."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    meta = dumped.get("_meta") or {}
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description or "",
        "input_schema": dumped.get("inputSchema") or {},
        "output_schema": dumped.get("outputSchema"),
        "annotations": dumped.get("annotations") or {},
        "meta_ui": meta.get("ui") if isinstance(meta, dict) else None,
        "instructions": instructions or "",
    }


def pin_of(definition: dict[str, Any]) -> str:
    return hashlib.sha256(canonical(definition)).hexdigest()


def canonical(value: Any) -> bytes:
    """RFC 8785 canonical JSON. Where the standard library writes the same bytes (no number but
    integers below 2**53, no character beyond the BMP, whose keys would sort by UTF-16 units) its
    text is used: many times faster than the pure-Python `rfc8785` (a test compares the two)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if _ASTRAL.search(text) is None and _NOT_SMALL_INT.search(_STRING.sub('""', text)) is None:
        return text.encode()
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:  # a number JSON cannot carry exactly: still one stable form
        return text.encode()


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_STRING = re.compile(r'"(?:[^"\\]+|\\.)*"')
_NOT_SMALL_INT = re.compile(r"\.|\de|Infinity|NaN|\d{16,}")  # outside strings: a float, or a large integer


def legacy_hash(definition: dict[str, Any]) -> str:
    """The digest earlier versions pinned (description, input schema, annotations only): a pin of
    theirs still approves the same definition once, and is then replaced by the full pin."""
    old = {
        "description": definition.get("description", ""),
        "input_schema": definition.get("input_schema") or {},
        "annotations": definition.get("annotations") or {},
    }
    return hashlib.sha256(json.dumps(old, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def diff(before: dict[str, Any] | None, after: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields that differ (every field `after` has, when nothing was approved before)."""
    before = before or {}
    return [
        {"field": field, "before": before.get(field), "after": after.get(field)}
        for field in FIELDS
        if before.get(field) != after.get(field)
    ]


@dataclass(frozen=True, slots=True)
class Flag:
    field: str  # where: "description", "input_schema.properties.path.description", ...
    kind: Literal["tag_characters", "zero_width", "bidi_control", "mixed_script"]
    detail: str


def flags(definition: dict[str, Any]) -> list[Flag]:
    found: list[Flag] = []
    for where, text in _strings(definition, ""):
        found.extend(_flags_in(where, text))
    return found


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, dict):
        out: list[tuple[str, str]] = []
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            out += _strings(key, path) if _suspicious(str(key)) else []
            out += _strings(item, path)
        return out
    if isinstance(value, list):
        return [pair for i, item in enumerate(value) for pair in _strings(item, f"{where}[{i}]")]
    return []


def _suspicious(text: str) -> bool:
    return any(ord(c) > 0x7F for c in text)


def _flags_in(where: str, text: str) -> list[Flag]:
    if not _suspicious(text):
        return []
    out: list[Flag] = []
    tags = [c for c in text if 0xE0000 <= ord(c) <= 0xE007F]
    if tags:
        hidden = "".join(chr(ord(c) - 0xE0000) for c in tags if 0xE0020 <= ord(c) <= 0xE007E)
        out.append(Flag(where, "tag_characters", hidden))
    zero = [c for c in text if c in _ZERO_WIDTH]
    if zero:
        out.append(Flag(where, "zero_width", " ".join(f"U+{ord(c):04X}" for c in zero)))
    bidi = [c for c in text if c in _BIDI]
    if bidi:
        out.append(Flag(where, "bidi_control", " ".join(f"U+{ord(c):04X}" for c in bidi)))
    for word in _WORD.findall(text):
        scripts = {_script(c) for c in word if c.isalpha()} - {None}
        if len(scripts) > 1:
            out.append(Flag(where, "mixed_script", f"{word} ({', '.join(sorted(s for s in scripts if s))})"))
    return out


def _script(char: str) -> str | None:
    name = unicodedata.name(char, "")
    return next((s for s in _CONFUSABLE_SCRIPTS if name.startswith(s)), None)
