"""Users' own servers as rows of the configuration (user_servers.py adds and removes them): the
name they run under inside the host, and their sealed headers opened for the configuration."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from urllib.parse import urlsplit

from .store.console_rows import ConsoleRow
from .tools.oauth.vault import CredentialVault

__all__ = ["HEADERS", "guard_for", "internal_name", "with_headers"]

HEADERS = "server_headers"  # the vault kind its headers are sealed under


def internal_name(name: str, owner: str) -> str:
    return f"{name}.{hashlib.sha256(owner.lower().encode()).hexdigest()[:8]}"


def _owner(row: ConsoleRow) -> str | None:
    return row.source.removeprefix("user:") if row.source.startswith("user:") else None


def guard_for(url: str, allowed_hosts: list[str]) -> str:
    """Which of a user's server's requests pass the endpoint policy: all, or all but those to its
    own origin when its host is one the operator allowed."""
    return "others" if (urlsplit(url).hostname or "").lower() in allowed_hosts else "all"


async def with_headers(rows: list[ConsoleRow], vault: CredentialVault, allowed_hosts: list[str]) -> list[ConsoleRow]:
    """The rows with each user server's headers opened from the vault and its requests guarded
    (for the configuration only)."""
    opened = []
    for row in rows:
        owner = _owner(row)
        if owner and row.entry is not None:
            entry = {**row.entry, "guard_requests": guard_for(str(row.entry.get("url")), allowed_hosts)}
            sealed = await vault.get(row.name, owner, HEADERS)
            if sealed:
                entry["headers"] = json.loads(sealed)
            row = replace(row, entry=entry)
        opened.append(row)
    return opened
