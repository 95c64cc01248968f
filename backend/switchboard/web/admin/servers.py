"""The admin console's servers: `/api/admin/servers` (list, add), `/api/admin/servers/{name}`
(check an entry, edit, switch on or off, remove, restart). The work is console.py's; administrators only."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from ...console import ConsoleServers
from ...errors import BadRequest, StoreUnavailable
from ...identity.users import User
from ..deps import current_user, services_of
from .host import admin_services, restart_server

__all__ = ["router"]

router = APIRouter(prefix="/api/admin/servers", tags=["admin"])
UserDep = Annotated[User, Depends(current_user)]


def _console(request: Request, user: User, doing: str) -> ConsoleServers:
    services = admin_services(request, user, doing)
    if services.store_error is not None:
        raise StoreUnavailable(f"the console's servers cannot be changed now: {services.store_error}")
    return ConsoleServers(services)


@router.get("")
async def list_servers(request: Request, user: UserDep) -> dict[str, Any]:
    """Every server: where it comes from, its status, last error, trust and tools by trust state."""
    return {"servers": await _console(request, user, "see the servers").views()}


@router.post("/{name}/check")
async def check_server(request: Request, user: UserDep, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Connect to the server this mcp.json entry describes, list its tools, and stop: nothing is saved."""
    console = _console(request, user, "check a server")
    config, _ = await console.validate(name, _entry(body))
    return await console.check(name, config)


@router.post("", status_code=201)
async def add_server(request: Request, user: UserDep, body: dict[str, Any], check: bool = False) -> dict[str, Any]:
    """Add a server (an mcp.json entry plus `name`), or install a registry entry (`name`,
    `from_registry`, `variables`; `groups`, `compliance_level`, `enabled` optional); `?check=true`:
    only if it connects and lists tools."""
    console = _console(request, user, "add a server")
    if "from_registry" in body:
        row = await console.install(body, user.email, check=check)
    else:
        row = await console.add(body, user.email, check=check)
    _audit(request, user, "server_add", row.name, sorted(k for k in body if k not in ("name", "variables")))
    return {"server": row.name, "version": row.version}


@router.patch("/{name}")
async def edit_server(
    request: Request, user: UserDep, name: str, body: dict[str, Any], check: bool = False
) -> dict[str, Any]:
    """Change fields of a console server (null removes one), or switch any server on or off
    (`enabled`). `version`: the one shown; an older one is refused with 409."""
    await _console(request, user, "change a server").edit(name, dict(body), user.email, check=check)
    _audit(request, user, "server_edit", name, sorted(k for k in body if k != "version"))
    return {"server": name}


@router.delete("/{name}", status_code=204)
async def remove_server(request: Request, user: UserDep, name: str) -> Response:
    await _console(request, user, "remove a server").remove(name)
    _audit(request, user, "server_remove", name, [])
    return Response(status_code=204)


@router.post("/{name}/restart")
async def restart(request: Request, user: UserDep, name: str) -> dict[str, str]:
    return await restart_server(request, user, name)


def _entry(body: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object: an mcp.json entry plus 'name'")
    return {k: v for k, v in body.items() if k != "name"}


def _audit(request: Request, user: User, action: str, server: str, fields: list[str]) -> None:
    """The console's change as an audit record: which fields, never their values (headers and env hold secrets)."""
    services_of(request).audit.record(
        "admin_action", action=action, user=user.email, server=server, fields=fields or None, decision="allow"
    )
