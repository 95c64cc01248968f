"""The servers as the admin console shows them, and its live check of a server before it is
saved ("connect and list tools"). Tools are counted by trust state (tools/trust.py)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..config.models import ServerConfig
from .models import ServerStatus
from .oauth.url_guard import _is_ip, _public, _resolve
from .servers.connection import ServerConnection
from .servers.launch import stderr_path
from .servers.pool import ServerPool
from .servers.stdio import stderr_tail

__all__ = ["TRUST_STATES", "check_server", "masked_entry", "refused_url", "server_views", "trust_counts"]

TRUST_STATES = ("approved", "pending", "changed", "blocked")
STDERR_TAIL_BYTES = 2000
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}$")
HIDDEN = "(hidden)"


def trust_counts(states: Iterable[str]) -> dict[str, int]:
    counts = dict.fromkeys(TRUST_STATES, 0)
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    return counts


def masked_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry to show back: header and env values that are not `${VAR}` references are hidden
    (an edit that leaves them out keeps them)."""
    shown = dict(entry)
    for key in ("headers", "env"):
        if isinstance(shown.get(key), dict):
            shown[key] = {k: v if isinstance(v, str) and _REFERENCE.match(v) else HIDDEN for k, v in shown[key].items()}
    return shown


def server_views(pool: ServerPool, log_dir: Path, entries: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every server, `entries` being the console's own (shown back, masked, for editing)."""
    mcp = pool.mcp
    states: dict[str, list[str]] = {}
    for tool in pool.registry.all():
        states.setdefault(tool.server, []).append(tool.trust)
    views = []
    for status in sorted(pool.statuses(), key=lambda s: s.name):
        name = status.name
        config = pool.server_config(name)
        view: dict[str, Any] = {
            "name": name,
            "source": mcp.sources.get(name, "config"),
            "status": status.status,
            "last_error": status.reason,
            "transport": config.transport if config else status.transport,
            "groups": config.groups if config else [],
            "compliance_level": config.compliance_level if config else None,
            "enabled": config.enabled if config else True,
            "trust": config.trust if config else mcp.trust.get(name, "auto"),
            "protocol_version": status.protocol_version,
            "description": config.description if config else "",
            "tools": trust_counts(states.get(name, ())),
            "stderr_tail": _tail(log_dir, name) if config and config.transport == "stdio" else None,
        }
        if name in entries:
            view["entry"] = masked_entry(entries[name])
        views.append(view)
    return views


def _tail(log_dir: Path, name: str) -> str | None:
    return stderr_tail(stderr_path(log_dir, name), STDERR_TAIL_BYTES)


async def check_server(
    name: str, config: ServerConfig, *, project_root: Path, log_dir: Path, timeout_s: float
) -> dict[str, Any]:
    """Connect once, list the tools, stop: what the server would show if it were saved."""
    settled = asyncio.Event()
    seen: list[ServerStatus] = []

    def note(status: ServerStatus) -> None:
        if status.status != "starting":
            seen.append(status)
            settled.set()

    connection = ServerConnection(
        name,
        config.model_copy(update={"enabled": True}),
        project_root=project_root,
        log_dir=log_dir / "checks",  # not the running server's stderr log
        init_timeout_s=timeout_s,
        on_status=note,
        log_failures=False,
    )
    connection.start()
    try:
        await asyncio.wait_for(settled.wait(), timeout_s + 5)
    except TimeoutError:
        pass
    finally:
        tools = [tool.name for tool in connection.tools]
        await connection.stop()
    status = seen[0] if seen else connection.status
    ok = status.status == "ready"
    return {
        "ok": ok,
        "status": status.status,
        "reason": None if ok else (status.reason or "the server did not answer in time"),
        "protocol_version": status.protocol_version,
        "tools": tools if ok else [],
        "stderr_tail": None if ok or config.transport != "stdio" else _tail(log_dir / "checks", name),
    }


async def refused_url(url: str, *, allow_private: bool) -> str | None:
    """Why the host may not connect to a console server's `url` (the endpoint policy the sign-ins
    follow: http(s) only; no loopback, link-local or private address unless allowed), or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "it is not an http(s) address"
    if allow_private:
        return None
    host = parts.hostname.strip("[]")
    try:
        addresses = [host] if _is_ip(host) else await _resolve(host, parts.port or 443)
    except OSError:
        return "its host could not be found"
    if not addresses:
        return "its host has no address"
    if any(not _public(address) for address in addresses):
        return "it is on a loopback, link-local or private network address"
    return None
