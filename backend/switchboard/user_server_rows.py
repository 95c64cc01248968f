"""Users' own servers as rows of the configuration (user_servers.py adds and removes them): the
name they run under inside the host, and their sealed headers opened for the configuration."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from urllib.parse import urlsplit

from .store.governance.console_rows import ConsoleRow
from .tools.oauth.vault import CredentialVault

__all__ = ["DEPLOYMENT", "ENV", "HEADERS", "SEALED", "guard_for", "internal_name", "vault_owner", "with_headers"]

HEADERS = "server_headers"  # the vault kind its headers are sealed under
ENV = "server_env"  # a deployment server's secret environment values (an administrator's registry install)
SEALED = {"headers": HEADERS, "env": ENV}  # the entry's part -> its vault kind
DEPLOYMENT = "(deployment)"  # the vault's "user" for a deployment server's sealed values (never an email)


def internal_name(name: str, owner: str) -> str:
    return f"{name}.{hashlib.sha256(owner.lower().encode()).hexdigest()[:8]}"


def _owner(row: ConsoleRow) -> str | None:
    return row.source.removeprefix("user:") if row.source.startswith("user:") else None


def vault_owner(row: ConsoleRow) -> str:
    """Whose sealed values a row's are, in the vault: its owner's, or the deployment's."""
    return _owner(row) or DEPLOYMENT


def guard_for(url: str, allowed_hosts: list[str]) -> str:
    """Which of a user's server's requests pass the endpoint policy: all, or all but those to its
    own origin when its host is one the operator allowed."""
    return "others" if (urlsplit(url).hostname or "").lower() in allowed_hosts else "all"


async def with_headers(rows: list[ConsoleRow], vault: CredentialVault, allowed_hosts: list[str]) -> list[ConsoleRow]:
    """The rows with their sealed headers (and a deployment server's sealed environment values)
    opened from the vault, and each user server's requests guarded (for the configuration only)."""
    opened = []
    for row in rows:
        if row.entry is not None:
            owner = _owner(row)
            entry = dict(row.entry)
            if owner:
                entry["guard_requests"] = guard_for(str(row.entry.get("url")), allowed_hosts)
            for part, kind in SEALED.items():
                sealed = (
                    await vault.get(row.name, owner or DEPLOYMENT, kind) if owner is None or part == "headers" else None
                )
                if sealed:
                    entry[part] = {**(entry.get(part) or {}), **json.loads(sealed)}
            row = replace(row, entry=entry)
        opened.append(row)
    return opened
