"""The configuration with the admin console's part laid over the files': the servers it added
(validated by the loader, as an mcp.json entry is) and the file servers it switched off. A server
added in the console starts in `"trust": "review"`; the files' servers keep the files' trust."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from ..errors import ConfigError
from .loader import McpConfig, server_entry
from .models import ServerConfig

__all__ = ["CONSOLE", "ConsoleServer", "console_entry", "overlay"]

CONSOLE = "the admin console"  # where a console server's entry comes from, in its errors
DEFAULT_TRUST = "review"
TRUSTS = ("auto", "review")


class ConsoleServer(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def entry(self) -> dict[str, Any] | None: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def trust(self) -> str | None: ...


def console_entry(name: str, entry: Mapping[str, Any], environ: Mapping[str, str]) -> tuple[ServerConfig, str]:
    """An added server's entry as the loader validates it, with its trust (`review` unless said);
    raises ConfigError naming the field."""
    entry = dict(entry)
    trust = entry.get("trust", DEFAULT_TRUST)
    if trust not in TRUSTS:
        raise ConfigError(f"must be one of {', '.join(TRUSTS)}", file=CONSOLE, server=name, field="trust")
    entry["trust"] = trust
    return server_entry(name, entry, environ, file=CONSOLE), trust


def overlay(mcp: McpConfig, rows: Iterable[ConsoleServer], environ: Mapping[str, str]) -> McpConfig:
    servers, errors = dict(mcp.servers), dict(mcp.errors)
    sources, trust = dict(mcp.sources), dict(mcp.trust)
    for row in rows:
        if row.source == "config":
            if row.name in servers and not row.enabled:
                servers[row.name] = servers[row.name].model_copy(update={"enabled": False})
            continue
        if row.name in servers or row.name in errors or row.entry is None:
            continue  # the files' entry wins (a console add refuses a name in use; a file may add one later)
        sources[row.name] = row.source  # "admin", or "user:<email>" for a user's own server
        try:
            config, trust[row.name] = console_entry(row.name, {**row.entry, "enabled": row.enabled}, environ)
        except ConfigError as exc:  # e.g. a ${VAR} unset since it was added
            errors[row.name] = exc
            continue
        owner = row.source.removeprefix("user:") if row.source.startswith("user:") else None
        servers[row.name] = config.model_copy(update={"owner": owner}) if owner else config
    return replace(mcp, servers=servers, errors=errors, sources=sources, trust=trust)
