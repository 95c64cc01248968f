"""A user's own servers: `/api/servers` (list, add), `/api/servers/{name}` (remove), and their
tools' review by their owner: `/api/servers/{name}/tools`, `.../tools/{tool}/approve`. The work is
user_servers.py's (the package root); every route answers for the signed-in user's own servers only."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response

from ...errors import NotFound, StoreUnavailable
from ...identity.users import User
from ...services import Services
from ...user_servers import UserServers
from ..admin.tools import Approval, Decided, _review
from ..deps import current_user, services_of

__all__ = ["router"]

router = APIRouter(prefix="/api/servers", tags=["servers"])
UserDep = Annotated[User, Depends(current_user)]


def _mine(request: Request, user: User) -> tuple[Services, UserServers]:
    services = services_of(request)
    if services.store_error is not None:
        raise StoreUnavailable(f"your servers cannot be changed now: {services.store_error}")
    return services, UserServers(services, user.email)


@router.get("")
async def list_servers(request: Request, user: UserDep) -> dict[str, Any]:
    """Your own servers: name, URL, transport, header names (never their values), status, tools by state."""
    return {"servers": await _mine(request, user)[1].views()}


@router.post("", status_code=201)
async def add_server(request: Request, user: UserDep, body: dict[str, Any]) -> dict[str, Any]:
    """Add a remote server of your own: `name`, `url`, `transport` (http or sse), `headers`; or
    install a registry entry's remote: `name`, `from_registry`, `variables`. One that answers 401
    with OAuth metadata is kept with `sign_in`: its owner signs in at `connect_url`."""
    services, servers = _mine(request, user)
    row = await servers.add(body)
    services.audit.record(
        "user_server",
        action="server_add",
        user=user.email,
        server=row.name,
        from_registry=body.get("from_registry"),
        decision="allow",
    )
    return {"name": body["name"], "server": row.name, "trust": row.trust, "sign_in": await servers.sign_in(row)}


@router.delete("/{name}", status_code=204)
async def remove_server(request: Request, user: UserDep, name: str) -> Response:
    services, servers = _mine(request, user)
    server = await servers.remove(name)
    services.audit.record("user_server", action="server_remove", user=user.email, server=server, decision="allow")
    return Response(status_code=204)


@router.get("/{name}/tools")
async def list_tools(request: Request, user: UserDep, name: str) -> Response:
    """Every tool of your server with its trust state, pin, diff and hidden-character flags."""
    services, servers = _mine(request, user)
    server = (await servers.row(name)).name
    tools = sorted((t for t in services.pool.registry.every_tool() if t.server == server), key=lambda t: t.name)
    reviews = [r for r in (_review(services, t) for t in tools) if r is not None]
    return Response(b'{"tools":[' + b",".join(reviews) + b"]}", media_type="application/json")


@router.post("/{name}/tools/{tool}/approve")
async def approve_tool(request: Request, user: UserDep, name: str, tool: str, body: Approval) -> Decided:
    """Approve exactly the definition with this pin (409 when it is no longer the tool's)."""
    services, servers = _mine(request, user)
    server = (await servers.row(name)).name
    found = next((t for t in services.pool.registry.every_tool() if t.server == server and t.name == tool), None)
    if found is None:
        raise NotFound(f"your server '{name}' has no tool named '{tool[:200]}'; list its tools again")
    decided = await services.pool.trust.decide(
        "approve",
        server=server,
        tool=found.name,
        qualified_name=found.qualified_name,
        pin=body.pin,
        by=user.email,
        before_state=found.trust,
    )
    services.audit.record(
        "user_server",
        action="tool_approve",
        user=user.email,
        server=server,
        tool=decided.qualified_name,
        pin=decided.pin,
        decision="allow",
    )
    return Decided(name=decided.qualified_name, state="approved", pin=decided.pin)
