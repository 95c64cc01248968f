"""Sharing a user's own server with the deployment (docs/servers.md "Sharing a server"): its owner
asks (`POST /api/servers/{name}/share`), the request waits in the admin console, and an
administrator approves it with groups (and a compliance level) or declines it with a reason.

An approval turns the same row into a deployment server (source `admin`, the groups given, no
owner) under the name it already runs under, so that its tools keep their trust states and pins;
its sealed headers move with it in the vault (from the owner's to the deployment's), and its
requests stay guarded as a user server's are. A decline leaves it its owner's. Nothing else moves:
a refused decision changes nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .config.console import console_entry
from .errors import BadRequest, ConfigError, NotFound
from .store.governance.console_rows import ConsoleRecords, ConsoleRow
from .store.governance.share_rows import ShareRecords, ShareRequest
from .user_server_rows import DEPLOYMENT, HEADERS, guard_for
from .user_servers import UserServers

if TYPE_CHECKING:
    from .services import Services

__all__ = ["MAX_TEXT", "ServerShares"]

MAX_TEXT = 500  # a note or a reason


def _text(field: str, value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise BadRequest(f"field '{field}': text of at most {MAX_TEXT} characters", action="Shorten it.")
    return value


class ServerShares:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._records = ShareRecords(services.store)
        self._rows = ConsoleRecords(services.store)

    async def ask(self, owner: str, name: str, note: object) -> ShareRequest:
        row = await UserServers(self._services, owner).row(name)
        request = ShareRequest(row.name, owner, name, _text("note", note), "pending", datetime.now(UTC))
        await self._records.ask(request)
        return request

    async def mine(self, owner: str) -> dict[str, ShareRequest]:
        """An owner's requests by server (what their list shows beside each server)."""
        return {r.server: r for r in await self._records.requests(owner)}

    async def views(self) -> list[dict[str, Any]]:
        """Every request whose server is still its owner's, with what an administrator decides on."""
        rows = {row.name: row for row in await self._rows.servers()}
        vault = self._services.pool.vault
        views = []
        for request in await self._records.requests():
            row = rows.get(request.server)
            if row is None or row.source != f"user:{request.owner}" or row.entry is None:
                continue
            sealed = await vault.get(row.name, request.owner, HEADERS)
            views.append(
                {
                    **request.as_dict(),
                    "url": row.entry.get("url"),
                    "transport": row.entry.get("transport"),
                    "headers": sorted(_names(sealed)),
                    "version": row.version,
                }
            )
        return views

    async def approve(self, server: str, groups: object, level: object, by: str) -> ConsoleRow:
        pending = {r.server: r for r in await self._records.requests() if r.state == "pending"}
        request = pending.get(server)
        row = next((r for r in await self._rows.servers() if r.name == server), None)
        if request is None or row is None or row.entry is None or row.source != f"user:{request.owner}":
            raise NotFound(f"no request to share '{server}' is waiting", action="Reload the list.")
        if not isinstance(groups, list) or not groups or not all(isinstance(g, str) and g for g in groups):
            raise BadRequest("field 'groups': the groups that may use it (a list; '*' for everyone)")
        entry: dict[str, Any] = {**row.entry, "groups": groups}
        if _text("compliance_level", level) is not None:
            entry["compliance_level"] = level
        url = str(entry.get("url"))
        entry["guard_requests"] = guard_for(url, self._services.settings.user_server_hosts)
        try:
            config, trust = console_entry(server, entry, self._services.environ)
        except ConfigError as exc:
            raise BadRequest(str(exc), action="Correct the field and try again; nothing was changed.") from None
        shared = replace(
            row,
            source="admin",
            entry=entry,
            enabled=config.enabled and row.enabled,
            trust=trust,
            version=row.version + 1,
            updated_by=by,
            updated_at=datetime.now(UTC),
        )
        vault = self._services.pool.vault
        sealed = await vault.get(server, request.owner, HEADERS)
        if sealed:
            await vault.put(server, DEPLOYMENT, HEADERS, sealed)
        try:
            await self._records.approve(shared, expected=row.version)
        except Exception:
            await vault.forget(server, DEPLOYMENT)
            raise
        await vault.forget(server, request.owner)  # its headers are the deployment's now
        await self._services.life.servers_changed()
        return shared

    async def decline(self, server: str, reason: object, by: str) -> ShareRequest:
        found = next((r for r in await self._records.requests() if r.server == server), None)
        if found is None or found.state != "pending":
            raise NotFound(f"no request to share '{server}' is waiting", action="Reload the list.")
        now = datetime.now(UTC)
        text = _text("reason", reason)
        await self._records.decline(server, by, text, now)
        return replace(found, state="declined", decided_by=by, decided_at=now, reason=text)


def _names(sealed: str | None) -> list[str]:
    return list(json.loads(sealed)) if sealed else []
