"""Qualified tool names: `{server}_{tool}`, reduced to what providers accept."""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "qualify"]

MAX_NAME = 64
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")


def _suffix(server: str, tool: str) -> str:
    return hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:6]


def qualify(server: str, tool: str, taken: set[str]) -> str:
    """A provider-safe, unique name for `tool` on `server`; stable for the
    same (server, tool) pair.  `taken` holds names already given out."""
    name = _ILLEGAL.sub("_", f"{server}_{tool}")
    if len(name) <= MAX_NAME and name not in taken:
        return name
    suffixed = f"{name[: MAX_NAME - 7]}_{_suffix(server, tool)}"
    if suffixed not in taken:
        return suffixed
    counter = 2  # a hash collision on top of a name collision: vanishingly rare
    while f"{suffixed[: MAX_NAME - 3]}_{counter}" in taken:
        counter += 1
    return f"{suffixed[: MAX_NAME - 3]}_{counter}"
