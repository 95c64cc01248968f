"""Sharing a user's own server (server_shares.py): its owner asks on
`POST /api/servers/{name}/share`; administrators see the requests on `GET /api/admin/shares`
and decide on `POST /api/admin/servers/{server}/share/approve` (groups, compliance level) or
`.../share/decline` (a reason). Every step is audited."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from ...errors import StoreUnavailable
from ...identity.users import User
from ...server_shares import MAX_TEXT, ServerShares
from ...services import Services
from ..admin.host import admin_services
from ..deps import current_user, services_of

__all__ = ["router"]

router = APIRouter(tags=["servers"])
UserDep = Annotated[User, Depends(current_user)]


class ShareAsk(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(default=None, max_length=MAX_TEXT, description="a word to the administrator")


class ShareApproval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    groups: list[str] = Field(min_length=1, description="the groups that may use it ('*': everyone)")
    compliance_level: str | None = Field(default=None, max_length=MAX_TEXT, description="its compliance level")


class ShareDecline(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str | None = Field(default=None, max_length=MAX_TEXT, description="what the owner is told")


def _usable(services: Services) -> Services:
    if services.store_error is not None:
        raise StoreUnavailable(f"share requests cannot be changed now: {services.store_error}")
    return services


@router.post("/api/servers/{name}/share", status_code=202)
async def ask_to_share(request: Request, user: UserDep, name: str, body: ShareAsk) -> dict[str, Any]:
    """Ask an administrator to make your server the deployment's; it waits in the console."""
    services = _usable(services_of(request))
    asked = await ServerShares(services).ask(user.email, name, body.note)
    services.audit.record("user_server", action="share_request", user=user.email, server=asked.server, decision="ask")
    return {"server": asked.server, "state": asked.state}


@router.get("/api/admin/shares")  # not under /api/admin/servers/: that would be a server's name
async def share_requests(request: Request, user: UserDep) -> dict[str, Any]:
    """Users' requests to share their servers (pending and declined), with owner, URL and header names."""
    services = _usable(admin_services(request, user, "see the share requests"))
    return {"requests": await ServerShares(services).views()}


@router.post("/api/admin/servers/{server}/share/approve")
async def approve_share(request: Request, user: UserDep, server: str, body: ShareApproval) -> dict[str, Any]:
    """Make the user's server a deployment server for these groups; its tools keep their trust."""
    services = _usable(admin_services(request, user, "share a user's server"))
    row = await ServerShares(services).approve(server, body.groups, body.compliance_level, user.email)
    services.audit.record(
        "admin_action", action="share_approve", user=user.email, server=server, groups=body.groups, decision="allow"
    )
    return {"server": row.name, "source": row.source, "version": row.version}


@router.post("/api/admin/servers/{server}/share/decline")
async def decline_share(request: Request, user: UserDep, server: str, body: ShareDecline) -> dict[str, Any]:
    """Leave the server its owner's; the owner sees the reason."""
    services = _usable(admin_services(request, user, "decline a share request"))
    declined = await ServerShares(services).decline(server, body.reason, user.email)
    services.audit.record("admin_action", action="share_decline", user=user.email, server=server, decision="deny")
    return {"server": declined.server, "state": declined.state}
