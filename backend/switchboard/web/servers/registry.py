"""`GET /api/registry/servers?search=`: the MCP registries' entries this user may install
(users: entries with a remote server; administrators: every entry), from the registries' cache,
with each registry's state (an answer served after a failure says since when and how old)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from ...identity.access import Access
from ...identity.users import User
from ...registries import describe, offered_to
from ..deps import current_user, services_of

__all__ = ["router"]

router = APIRouter()
UserDep = Annotated[User, Depends(current_user)]


@router.get("/api/registry/servers")
async def registry_servers(
    request: Request, user: UserDep, search: Annotated[str, Query(max_length=200)] = ""
) -> dict[str, Any]:
    admin = Access(user).is_admin()
    listing = await services_of(request).registries.search(search)
    servers = [describe(entry, admin) for entry in listing.entries if offered_to(entry, admin)]
    return {"servers": servers, "registries": [state.as_dict() for state in listing.registries]}
