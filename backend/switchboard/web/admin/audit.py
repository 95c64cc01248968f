"""Administrators' window on the audit log: its records with filters and a cursor, a download
of the filtered records (JSON lines or OCSF), and the public key checkpoints are signed with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from ...audit.export import exported, record_of
from ...errors import BadRequest, Forbidden, StoreUnavailable
from ...identity.access import Access
from ...identity.users import User
from ...services import Services
from ...store.governance.audit_log import AuditQuery, AuditStore
from ..deps import current_user, services_of

__all__ = ["router"]

router = APIRouter()
UserDep = Annotated[User, Depends(current_user)]
MAX_LIMIT = 1000


def _audit(request: Request, user: User) -> tuple[Services, AuditStore]:
    services = services_of(request)
    if not Access(user).allowed("administer"):
        raise Forbidden("only administrators may read the audit log")
    if services.audit.store is None:
        raise StoreUnavailable(f"the audit log cannot be read now: {services.store_error or 'the store is not open'}")
    return services, services.audit.store


_DATE_TIME: dict[str, Any] = {"format": "date-time", "description": "an ISO date-time (or a date: its midnight, UTC)"}


def _when(name: str, text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            f"{name} is not an ISO date or time", action="Send e.g. 2026-11-28 or 2026-11-28T10:00:00Z."
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class _Filters:
    def __init__(
        self,
        user: str | None = Query(default=None, max_length=320),
        tool: str | None = Query(default=None, max_length=500),
        server: str | None = Query(default=None, max_length=200),
        decision: str | None = Query(default=None, max_length=32),
        kind: str | None = Query(default=None, max_length=64),
        since: str | None = Query(default=None, max_length=40, json_schema_extra=_DATE_TIME),
        until: str | None = Query(default=None, max_length=40, json_schema_extra=_DATE_TIME),
    ) -> None:
        self.values: dict[str, Any] = {
            "user": user,
            "tool": tool,
            "server": server,
            "decision": decision,
            "kind": kind,
            "since": _when("since", since),
            "until": _when("until", until),
        }


FiltersDep = Annotated[_Filters, Depends()]


@router.get("/api/admin/audit")
async def audit_records(
    request: Request,
    user: UserDep,
    filters: FiltersDep,
    cursor: int | None = Query(default=None, ge=1, description="`next_cursor` of the page before"),
    limit: int = Query(default=100, ge=1, le=MAX_LIMIT),
) -> dict[str, Any]:
    """Records, newest first, each as written (with its `hash`). `next_cursor` fetches the older ones."""
    services, audit = _audit(request, user)
    await services.audit.flush(timeout_s=2.0)  # what this process recorded a moment ago is shown too
    found = await audit.find_with_hash(AuditQuery(**filters.values, before=cursor, limit=limit))
    records = [record_of(body, hash_) for _, body, hash_ in found]
    return {"records": records, "next_cursor": found[-1][0] if len(found) == limit else None}


@router.get("/api/admin/audit/export")
async def audit_export(
    request: Request,
    user: UserDep,
    filters: FiltersDep,
    format: Literal["jsonl", "ocsf"] = Query(default="jsonl"),
) -> StreamingResponse:
    """Every record the filters pick, oldest first, one JSON object a line (a download)."""
    services, audit = _audit(request, user)
    await services.audit.flush(timeout_s=2.0)
    query = AuditQuery(**filters.values)

    async def lines() -> AsyncIterator[str]:
        async for line in exported(audit, query, ocsf=format == "ocsf"):
            yield line + "\n"

    name = f"audit-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.{'ocsf.' if format == 'ocsf' else ''}jsonl"
    return StreamingResponse(
        lines(),
        media_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"},
    )


@router.get("/api/admin/audit/key")
async def audit_key(request: Request, user: UserDep) -> dict[str, str]:
    """The Ed25519 public key (base64, raw 32 bytes) the checkpoints are signed with."""
    services = services_of(request)
    if not Access(user).allowed("administer"):
        raise Forbidden("only administrators may read the audit log's key")
    return {"algorithm": "Ed25519", "public_key": services.audit.public_key}
