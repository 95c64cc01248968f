"""Administrators' routes: reload the configuration, restart one MCP server."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from ...config import load_app_config
from ...errors import BadRequest, Forbidden, NotFound
from ...identity.access import Access
from ...identity.users import User
from ...services import Services
from ..deps import current_user, services_of

__all__ = ["admin_services", "restart_server", "router"]

router = APIRouter()
UserDep = Annotated[User, Depends(current_user)]


def admin_services(request: Request, user: User, doing: str) -> Services:
    services = services_of(request)
    if not Access(user).allowed("administer"):
        raise Forbidden(f"only administrators may {doing}")
    return services


@router.post("/api/admin/reload")
async def reload_config(request: Request, user: UserDep) -> dict[str, object]:
    """Re-read every config file. A file that cannot be read at all is refused, and the running
    configuration stays: a typo must not stop every server the file lists."""
    services = admin_services(request, user, "reload the configuration")
    settings = services.settings
    broken = load_app_config(settings.defaults_dir, settings.config_dir, services.environ).broken_files()
    services.audit.record("admin_action", action="reload", user=user.email, decision="error" if broken else "allow")
    if broken:
        services.life.refuse_reload(broken, user.email)
        raise BadRequest(
            "not reloaded: " + "; ".join(str(e) for e in broken),
            action="Fix the file and reload again; the running configuration is unchanged.",
        )
    return await services.life.reload()


@router.post("/api/servers/{name}/restart")
async def restart_server(request: Request, user: UserDep, name: str) -> dict[str, str]:
    """Stop one server and start it afresh (its status goes back to `starting`)."""
    services = admin_services(request, user, "restart a server")
    pool = services.pool
    if name in services.config.mcp.errors:
        raise BadRequest(
            f"server '{name}' has an error in its mcp.json entry: {services.config.mcp.errors[name]}",
            action="Fix the entry, then reload the configuration.",
        )
    config = pool.server_config(name)
    if config is None:
        raise NotFound(f"there is no server named '{name}'")
    if not config.enabled:
        raise BadRequest(f"server '{name}' is disabled", action='Set "enabled": true in mcp.json and reload.')
    services.audit.record("admin_action", action="restart", user=user.email, server=name, decision="allow")
    await pool.restart(name)
    return {"server": name, "status": "starting"}
