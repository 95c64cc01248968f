"""What the admin console does to servers: add, edit, switch on and off, remove, check. Each
change is validated as the loader validates mcp.json (an error names the field), written to the
store in one transaction against the version the administrator saw, and only then run, here and
on every other process (`Lifecycle.servers_changed`). A change refused changes nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from .config.console import CONSOLE, console_entry
from .config.loader import SERVER_NAME
from .config.models import ServerConfig
from .errors import BadRequest, ConfigError, Conflict, NotFound
from .registry_install import planned
from .services import Services
from .store.governance.console_rows import ConsoleRecords, ConsoleRow
from .store.governance.share_rows import ShareRecords
from .tools.console_view import HIDDEN, check_server, refused_url, server_views
from .user_server_rows import DEPLOYMENT, SEALED, vault_owner

__all__ = ["ConsoleServers"]

CONFIG_FILE_FIELDS = {"enabled", "version"}  # what the console may change of a config-file server
INSTALL_EXTRA = ("groups", "compliance_level", "enabled")  # what an administrator's install may add


def _bad(exc: ConfigError) -> BadRequest:
    return BadRequest(str(exc), action="Correct the field and try again; nothing was changed.")


def _field(name: str, field: str, message: str) -> BadRequest:
    return _bad(ConfigError(message, file=CONSOLE, server=name, field=field))


class ConsoleServers:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._records = ConsoleRecords(services.store)

    async def rows(self) -> dict[str, ConsoleRow]:
        return {row.name: row for row in await self._records.servers()}

    async def views(self) -> list[dict[str, Any]]:
        rows = await self.rows()
        entries = {name: row.entry for name, row in rows.items() if row.entry is not None}
        views = server_views(self._services.pool, self._services.settings.log_dir, entries)
        for view in views:
            row = rows.get(view["name"])
            view["version"] = row.version if row else None
        return views

    async def validate(self, name: str, entry: dict[str, Any]) -> tuple[ServerConfig, str]:
        try:
            config, trust = console_entry(name, entry, self._services.environ)
        except ConfigError as exc:
            raise _bad(exc) from None
        if config.url is not None:
            why = await refused_url(config.url, allow_private=self._services.settings.auth_mode == "dev")
            if why is not None:
                raise _field(name, "url", f"the endpoint policy refuses this address: {why}")
        return config, trust

    async def check(self, name: str, config: ServerConfig) -> dict[str, Any]:
        settings = self._services.settings
        return await check_server(
            name,
            config,
            project_root=settings.project_root,
            log_dir=settings.log_dir,
            timeout_s=settings.server_start_timeout_s,
        )

    async def _checked(self, name: str, config: ServerConfig) -> None:
        if not config.enabled:
            return
        result = await self.check(name, config)
        if not result["ok"]:
            raise BadRequest(
                f"server '{name}': the check failed ({result['status']}): {result['reason']}",
                action="Fix the entry (or the server) and try again; nothing was saved.",
            )

    async def add(self, body: dict[str, Any], by: str, *, check: bool) -> ConsoleRow:
        name = body.get("name")
        if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
            raise _field(str(name), "name", "server names may use letters, digits, '_', '.', '-' (at most 64)")
        entry = {k: v for k, v in body.items() if k != "name"}
        mcp = self._services.pool.mcp
        if name in mcp.servers or name in mcp.errors or name in await self.rows():
            raise Conflict(
                f"server '{name}', field 'name': a server of this name exists", action="Choose another name."
            )
        config, trust = await self.validate(name, entry)
        if check:
            await self._checked(name, config)
        row = ConsoleRow(name, "admin", entry, config.enabled, trust, 1, by, datetime.now(UTC))
        await self._records.add(row)
        await self._services.life.servers_changed()
        return row

    async def install(self, body: dict[str, Any], by: str, *, check: bool) -> ConsoleRow:
        """A registry entry installed as a deployment server (registry_install.py), in `review`
        trust whatever the body says; its secret values sealed in the vault, not in its row."""
        found = await planned(self._services, body, is_admin=True, extra=INSTALL_EXTRA)
        name = found.name
        mcp = self._services.pool.mcp
        if name in mcp.servers or name in mcp.errors or name in await self.rows():
            raise Conflict(
                f"server '{name}', field 'name': a server of this name exists", action="Choose another name."
            )
        entry = {**found.entry, **{k: body[k] for k in INSTALL_EXTRA if k in body}}
        opened = {**entry, **{part: {**entry.get(part, {}), **values} for part, values in found.sealed.items()}}
        try:
            config, trust = console_entry(name, opened, self._services.environ)
        except ConfigError as exc:
            raise _bad(exc) from None
        if check:
            await self._checked(name, config)
        vault = self._services.pool.vault
        for part, values in found.sealed.items():
            await vault.put(name, DEPLOYMENT, SEALED[part], json.dumps(values))
        row = ConsoleRow(name, "admin", entry, config.enabled, trust, 1, by, datetime.now(UTC))
        try:
            await self._records.add(row)
        except Exception:
            await vault.forget(name, DEPLOYMENT)
            raise
        await self._services.life.servers_changed()
        return row

    async def edit(self, name: str, changes: dict[str, Any], by: str, *, check: bool) -> None:
        rows = await self.rows()
        row = rows.get(name)
        version = changes.pop("version", row.version if row else None)
        if row is None or row.source == "config":
            if name not in self._services.files_mcp.servers:
                raise NotFound(f"there is no server named '{name}'")
            extra = sorted(set(changes) - CONFIG_FILE_FIELDS)
            if extra:
                raise _field(
                    name,
                    extra[0],
                    "a server from the config files keeps the files' definition; "
                    "here it can only be switched on or off, and restarted",
                )
            enabled = changes.get("enabled", row.enabled if row else True)
            if not isinstance(enabled, bool):
                raise _field(name, "enabled", "must be true or false")
            new = ConsoleRow(name, "config", None, enabled, None, (version or 0) + 1, by, datetime.now(UTC))
            await self._records.put(new, expected=version if row else None)
        elif row.source.startswith("user:"):  # a user's own server: switched on or off here, or removed
            if set(changes) - {"enabled"} or not isinstance(changes.get("enabled"), bool):
                raise _field(name, "enabled", "a user's own server can only be switched on or off here, or removed")
            new = replace(row, enabled=changes["enabled"], updated_by=by, updated_at=datetime.now(UTC))
            await self._records.put(replace(new, version=(version or 0) + 1), expected=version)
        else:
            assert row.entry is not None
            entry = {**row.entry}
            for key, value in changes.items():
                if value is None:
                    entry.pop(key, None)
                elif key in ("headers", "env") and isinstance(value, dict):
                    old = row.entry.get(key) or {}
                    entry[key] = {k: old.get(k, v) if v == HIDDEN else v for k, v in value.items()}
                else:
                    entry[key] = value
            config, trust = await self.validate(name, entry)
            if check:
                await self._checked(name, config)
            new = replace(
                row,
                entry=entry,
                enabled=config.enabled,
                trust=trust,
                updated_by=by,
                updated_at=datetime.now(UTC),
                version=(version or 0) + 1,
            )
            await self._records.put(new, expected=version)
        await self._services.life.servers_changed()

    async def remove(self, name: str) -> None:
        row = (await self.rows()).get(name)
        if row is None or row.source == "config":
            if name in self._services.files_mcp.servers:
                raise BadRequest(
                    f"server '{name}' comes from the config files",
                    action="Remove it from mcp.json and reload, or switch it off here.",
                )
            raise NotFound(f"there is no server named '{name}'")
        await self._records.remove(name)
        await ShareRecords(self._services.store).forget(name)  # a request to share it, if it was a user's
        await self._services.pool.vault.forget(name, vault_owner(row))  # its sealed headers (and env)
        await self._services.life.servers_changed()
