"""The admin console's users: `GET /api/admin/users` (seen, groups and where each comes from, last
seen, open sessions, API tokens, connected servers) and `POST /api/admin/users/{email}/revoke`
(their API tokens and open sessions, on every process at once). Administrators only."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict

from ...errors import BadRequest, NotFound, StoreUnavailable
from ...identity.access import administers
from ...identity.users import User, normalize_email
from ...services import Services
from ...store.console_rows import ConsoleRecords
from ...tools.servers.user_sessions import UserSessions
from ..deps import current_user
from ..ws import OpenSockets
from .host import admin_services

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


def _connected(services: Services) -> dict[str, list[str]]:
    """user -> the servers they hold a session of their own with (on this process)."""
    found: dict[str, list[str]] = {}
    for name, conn in services.pool.connections.items():
        if isinstance(conn, UserSessions):
            for email in conn.listings():
                found.setdefault(email, []).append(name)
    return found


@router.get("")
async def list_users(request: Request, user: UserDep) -> dict[str, Any]:
    services, records = _records(request, user, "see the users")
    sockets: OpenSockets = request.app.state.open_sockets
    tokens, connected = await records.tokens(), _connected(services)
    return {
        "users": [
            {
                "email": seen.email,
                "groups": [{"name": group, "source": source} for group, source in seen.groups.items()],
                "admin": administers(seen.groups, services.config.groups),
                "first_seen": seen.first_seen,
                "last_seen": seen.last_seen,
                "open_sessions": sockets.count(seen.email),
                "api_tokens": tokens.get(seen.email, []),
                "connected_servers": sorted(connected.get(seen.email, [])),
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
        done["sessions_closed_here"] = services.close_sessions(email)
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
