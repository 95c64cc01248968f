"""The admin console's users: `GET /api/admin/users` (seen, groups and where each comes from, last
seen, open sessions and connected servers on every process (web/admin/presence.py), API tokens) and `POST /api/admin/users/{email}/revoke`
(their API tokens and open sessions, on every process at once). Administrators only."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict

from ...errors import BadRequest, NotFound, StoreUnavailable
from ...identity.access import administers
from ...identity.users import User, normalize_email
from ...services import Services
from ...store.governance.console_rows import ConsoleRecords
from ..deps import current_user
from ..ws import OpenSockets
from .host import admin_services
from .presence import everywhere

__all__ = ["router"]

router = APIRouter(prefix="/api/admin/users", tags=["admin"])
UserDep = Annotated[User, Depends(current_user)]


class Revoke(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tokens: bool = False
    sessions: bool = False


def _records(request: Request, user: User, doing: str) -> tuple[Services, ConsoleRecords]:
    services = admin_services(request, user, doing)
    if services.store_error is not None:
        raise StoreUnavailable(f"the users cannot be read now: {services.store_error}")
    return services, ConsoleRecords(services.store)


@router.get("")
async def list_users(request: Request, user: UserDep) -> dict[str, Any]:
    services, records = _records(request, user, "see the users")
    sockets: OpenSockets = request.app.state.open_sockets
    tokens, held = await records.tokens(), await everywhere(services, sockets)
    nothing: dict[str, Any] = {"sessions": 0, "servers": []}
    return {
        "users": [
            {
                "email": seen.email,
                "groups": [{"name": group, "source": source} for group, source in seen.groups.items()],
                "admin": administers(seen.groups, services.config.groups),
                "first_seen": seen.first_seen,
                "last_seen": seen.last_seen,
                "open_sessions": held.get(seen.email, nothing)["sessions"],
                "api_tokens": tokens.get(seen.email, []),
                "connected_servers": sorted(held.get(seen.email, nothing)["servers"]),
            }
            for seen in await records.users()
        ]
    }


@router.post("/{email}/revoke")
async def revoke(request: Request, user: UserDep, email: str, body: Revoke) -> dict[str, Any]:
    """Revoke the user's API tokens (`tokens`) and close their open pages (`sessions`) everywhere."""
    services, records = _records(request, user, "revoke a user's access")
    if not (body.tokens or body.sessions):
        raise BadRequest("say what to revoke: tokens, sessions or both")
    email = normalize_email(email)
    if email not in {seen.email for seen in await records.users()}:
        raise NotFound(f"no user '{email}' has been seen")
    done: dict[str, Any] = {"user": email}
    if body.tokens:
        done["tokens_revoked"] = await records.revoke_tokens(email)
    if body.sessions:
        done["sessions_closed_here"] = request.app.state.open_sockets.close_user(email)
        services.turns.relay.admin_changed("sessions", email)
    services.audit.record(
        "admin_action",
        action="revoke",
        user=user.email,
        target=email,
        tokens=body.tokens,
        sessions=body.sessions,
        decision="allow",
    )
    return done
