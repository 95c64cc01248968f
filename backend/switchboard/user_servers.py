"""A user's own remote servers (`/api/servers`, docs/servers.md "Your own servers"): stored as the
admin console's are (`console_servers`, source `user:<email>`), under a name of their own made
from the user's name and a short hash of the owner, so that two users' servers of one name never
meet; its headers are sealed in the credential vault, never in the row and never shown back. Only
its owner sees and calls it (`Access.may_use_server` checks `ServerConfig.owner`). A server is
saved only once its URL passed the endpoint policy and it answered MCP with at most MAX_TOOLS tools,
or answered 401 with OAuth metadata (then its owner signs in with the Connect flow, under the same
endpoint policy): a refused add changes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .config.console import console_entry
from .config.loader import SERVER_NAME
from .errors import BadRequest, ConfigError, Conflict, Forbidden, NotFound, ToolError
from .registry_install import planned
from .store.governance.console_rows import ConsoleRecords, ConsoleRow
from .store.governance.share_rows import ShareRecords, ShareRequest
from .tools.console_view import check_server, refused_url, trust_counts
from .tools.oauth_discovery import asks_for_sign_in
from .user_server_rows import HEADERS, guard_for, internal_name

if TYPE_CHECKING:
    from .services import Services

__all__ = ["MAX_TOOLS", "UserServers"]

FIELDS = ("name", "url", "transport", "headers")
TRANSPORTS = ("http", "sse")
MAX_TOOLS = 200  # a server listing more is refused: a catalogue that large drowns the model
MAX_NAME = 55  # 64 less the owner's suffix


def _share(request: ShareRequest | None) -> dict[str, Any] | None:
    if request is None:
        return None
    return {"state": request.state, "reason": request.reason, "requested_at": request.requested_at.isoformat()}


def _field(field: str, message: str) -> BadRequest:
    return BadRequest(f"field '{field}': {message}", action="Correct the field and try again; nothing was changed.")


class UserServers:
    def __init__(self, services: Services, owner: str) -> None:
        if services.settings.user_servers == "off":
            raise Forbidden(
                "adding your own servers is switched off on this host",
                action="Ask your administrator to add the server for you.",
            )
        self._services = services
        self._owner = owner
        self._records = ConsoleRecords(services.store)

    async def mine(self) -> dict[str, ConsoleRow]:
        """This user's servers by the name they gave them."""
        source = f"user:{self._owner}"
        return {row.name.rsplit(".", 1)[0]: row for row in await self._records.servers() if row.source == source}

    async def views(self) -> list[dict[str, Any]]:
        pool = self._services.pool
        states: dict[str, list[str]] = {}
        for tool in pool.registry.all():
            states.setdefault(tool.server, []).append(tool.trust)
        statuses = {status.name: status for status in pool.statuses()}
        shares = {r.server: r for r in await ShareRecords(self._services.store).requests(self._owner)}
        views = []
        for name, row in sorted((await self.mine()).items()):
            entry, status = row.entry or {}, statuses.get(row.name)
            sign_in = await self.sign_in(row)
            if sign_in is not None and row.name in pool.connections:
                status = await pool.user_status(row.name, self._owner)  # the server as its owner sees it
            views.append(
                {
                    "name": name,
                    "server": row.name,
                    "url": entry.get("url"),
                    "transport": entry.get("transport"),
                    "headers": sorted(await self._header_names(row.name)),
                    "enabled": row.enabled,
                    "status": status.status if status else "starting",
                    "last_error": status.reason if status else None,
                    "tools": trust_counts(states.get(row.name, ())),
                    "sign_in": sign_in,
                    "share": _share(shares.get(row.name)),
                }
            )
        return views

    async def sign_in(self, row: ConsoleRow) -> dict[str, Any] | None:
        """For a server that signs in (OAuth): whether its owner is signed in, and the Connect flow's
        routes; else None."""
        if not (row.entry or {}).get("auth"):
            return None
        try:
            connected = await self._services.pool.connected(row.name, self._owner)
        except ToolError:  # not running (switched off): not signed in, as far as it shows
            connected = False
        return {
            "connected": connected,
            "connect_url": f"/api/servers/{row.name}/connect",
            "disconnect_url": f"/api/servers/{row.name}/connection",
        }

    async def _header_names(self, server: str) -> list[str]:
        sealed = await self._services.pool.vault.get(server, self._owner, HEADERS)
        return list(json.loads(sealed)) if sealed else []

    async def row(self, name: str) -> ConsoleRow:
        row = (await self.mine()).get(name)
        if row is None:
            raise NotFound(f"you have no server named '{name}'")
        return row

    async def add(self, body: Any) -> ConsoleRow:
        """A server from its URL (FIELDS), or installed from a registry's entry (INSTALL_FIELDS)."""
        if isinstance(body, dict) and "from_registry" in body:
            found = await planned(self._services, body, is_admin=False, max_name=MAX_NAME)
            fields, entry_name = found.plan.fields, found.plan.entry
            about = f"{fields['description']} ({entry_name}, added by {self._owner})"
            return await self._save(found.name, fields["url"], fields["transport"], fields.get("headers") or {}, about)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object: name, url, transport, headers")
        unknown = sorted(set(body) - set(FIELDS))
        if unknown:
            raise _field(unknown[0], f"unknown field (a server of your own takes only {', '.join(FIELDS)})")
        name, url, headers = body.get("name"), body.get("url"), body.get("headers") or {}
        if not isinstance(name, str) or len(name) > MAX_NAME or not SERVER_NAME.fullmatch(name):
            raise _field("name", f"server names may use letters, digits, '_', '.', '-' (at most {MAX_NAME})")
        if not isinstance(url, str) or not url:
            raise _field("url", "the server's address is needed (a remote server: http or sse)")
        transport = body.get("transport")
        if transport is not None and transport not in TRANSPORTS:
            raise _field("transport", f"must be one of {', '.join(TRANSPORTS)} (never a command)")
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise _field("headers", "must be an object of names to text values")
        return await self._save(name, url, transport, headers, f"{name} (added by {self._owner})")

    async def _save(
        self, name: str, url: str, transport: str | None, headers: dict[str, str], description: str
    ) -> ConsoleRow:
        mine = await self.mine()
        if name in mine:
            raise Conflict(f"field 'name': you have a server named '{name}' already", action="Choose another name.")
        mcp = self._services.pool.mcp
        if internal_name(name, self._owner) in mcp.sources:  # one of theirs, shared with the deployment
            raise Conflict(f"field 'name': your server '{name}' was shared; choose another name")
        taken = {n for n, source in mcp.sources.items() if not source.startswith("user:")}
        if name in taken or name in mcp.errors or name in self._services.files_mcp.servers:
            raise Conflict(f"field 'name': the host has a server named '{name}'", action="Choose another name.")
        limit = self._services.settings.max_servers_per_user
        if len(mine) >= limit:
            raise Conflict(
                f"you have {len(mine)} servers of your own, the most this host allows ({limit})",
                action="Remove one first.",
            )
        host = (urlsplit(url).hostname or "").lower()
        if host not in self._services.settings.user_server_hosts:
            why = await refused_url(url, allow_private=False)
            if why is not None:
                raise _field("url", f"the endpoint policy refuses this address: {why}")
        server = internal_name(name, self._owner)
        entry: dict[str, Any] = {"url": url, "trust": "review", "description": description}
        if transport:
            entry["transport"] = transport
        try:
            guard = guard_for(url, self._services.settings.user_server_hosts)
            config, trust = console_entry(server, {**entry, "headers": headers, "guard_requests": guard}, {})
        except ConfigError as exc:
            raise BadRequest(str(exc), action="Correct the field and try again; nothing was changed.") from None
        settings = self._services.settings
        result = await check_server(
            server,
            config,
            project_root=settings.project_root,
            log_dir=settings.log_dir,
            timeout_s=settings.server_start_timeout_s,
        )
        if not result["ok"] and await self._asks_for_sign_in(server, entry, headers, guard):
            entry["auth"] = {"type": "oauth"}  # kept: its owner signs in with Connect, then reviews its tools
        elif not result["ok"]:
            raise BadRequest(
                f"server '{name}': {url} did not answer as an MCP server ({result['status']}): {result['reason']}",
                action="Check the address and transport; nothing was saved.",
            )
        if len(result["tools"]) > MAX_TOOLS:
            raise BadRequest(
                f"server '{name}' lists {len(result['tools'])} tools; a server of your own may have at most {MAX_TOOLS}",
                action="Ask your administrator to add it, with a tool filter; nothing was saved.",
            )
        vault = self._services.pool.vault
        if headers:
            await vault.put(server, self._owner, HEADERS, json.dumps(headers))
        row = ConsoleRow(server, f"user:{self._owner}", entry, True, trust, 1, self._owner, datetime.now(UTC))
        try:
            await self._records.add(row)
        except Exception:
            await vault.forget(server, self._owner)
            raise
        await self._services.life.servers_changed()
        return row

    async def _asks_for_sign_in(self, server: str, entry: dict[str, Any], headers: dict[str, str], guard: str) -> bool:
        """Whether the server answered 401 with OAuth metadata (the Connect flow's discovery), asked
        under the policy its sign-in will have."""
        config, _ = console_entry(server, {**entry, "auth": {"type": "oauth"}, "guard_requests": guard}, {})
        assert config.url is not None
        return await asks_for_sign_in(config.url, self._services.pool.sign_ins.policy(server, config), headers)

    async def remove(self, name: str) -> str:
        row = await self.row(name)
        await self._records.remove(row.name)
        await ShareRecords(self._services.store).forget(row.name)
        await self._services.pool.vault.forget(row.name, self._owner)
        await self._services.life.servers_changed()
        return row.name
