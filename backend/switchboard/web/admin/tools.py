"""Administrators review tools (tools/trust.py): list them by trust state with what changed and the
hidden characters found, approve exactly the pin reviewed, or block."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from cachetools import LRUCache
from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from ...errors import Forbidden, NotFound
from ...identity.access import Access
from ...identity.users import User
from ...services import Services
from ...tools import ToolInfo
from ...tools.trust import LEGACY
from ...tools.trust_pin import diff, flags
from ...trust_records import TrustRecord
from ..deps import current_user, services_of

__all__ = ["router"]

router = APIRouter(prefix="/api/admin/tools", tags=["admin"])
UserDep = Annotated[User, Depends(current_user)]
State = Literal["pending", "changed", "blocked", "approved"]


class Change(BaseModel):
    field: str
    before: Any = None
    after: Any = None


class HiddenFlag(BaseModel):
    field: str = Field(description="where: `description`, `input_schema.properties.x.description`, ...")
    kind: Literal["tag_characters", "zero_width", "bidi_control", "mixed_script"]
    detail: str = Field(description="tag characters: the hidden ASCII they spell; else the characters or word")


class ToolReview(BaseModel):
    name: str = Field(description="the qualified name (what the approve and block routes take)")
    server: str
    tool: str
    state: State
    pin: str = Field(description="the pin of the definition listed now: approve exactly this")
    approved_pin: str | None = Field(description="the pin approved before (`legacy:...`: an older version's)")
    definition: dict[str, Any]
    diff: list[Change] = Field(
        description="the fields that differ from the approved definition (none approved: empty, all of it is new)"
    )
    flags: list[HiddenFlag]


class ToolReviews(BaseModel):
    tools: list[ToolReview]


class Approval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pin: str = Field(min_length=1, max_length=80, description="the pin reviewed (as listed)")


class Decided(BaseModel):
    name: str
    state: State
    pin: str


def _admin(request: Request, user: User) -> Services:
    if not Access(user).allowed("administer"):
        raise Forbidden("only administrators may review tools")
    return services_of(request)


# A review is worked out (and written as JSON) once per tool, pin and decision: listing 300 tools
# is then joining their texts.
_REVIEWS: LRUCache[tuple[str, str, str, int], bytes] = LRUCache(maxsize=4096)


def _review(services: Services, tool: ToolInfo) -> bytes | None:
    trust = services.pool.trust
    seen = trust.seen(tool.server, tool.name)
    if seen is None:
        return None
    record = trust.record(tool.server, tool.name)
    key = (tool.qualified_name, seen[0], tool.trust, record.version if record is not None else 0)
    review = _REVIEWS.get(key)
    if review is None:
        review = _REVIEWS[key] = _make_review(tool, seen, record).model_dump_json().encode()
    return review


def _make_review(tool: ToolInfo, seen: tuple[str, dict[str, Any]], record: TrustRecord | None) -> ToolReview:
    pin, definition = seen
    before = record.definition if record is not None else None
    if before is not None and record is not None and (record.pin or "").startswith(LEGACY):
        changes = [c for c in diff(before, definition) if c["field"] in before]  # an old pin held fewer fields
    else:
        changes = diff(before, definition) if before is not None and tool.trust != "approved" else []
    return ToolReview(
        name=tool.qualified_name,
        server=tool.server,
        tool=tool.name,
        state=tool.trust,
        pin=pin,
        approved_pin=record.pin if record is not None else None,
        definition=definition,
        diff=[Change(**c) for c in changes],
        flags=[HiddenFlag(field=f.field, kind=f.kind, detail=f.detail) for f in flags(definition)],
    )


def _tool(services: Services, name: str) -> ToolInfo:
    tool = next((t for t in services.pool.registry.every_tool() if t.qualified_name == name), None)
    if tool is None:
        raise NotFound(f"there is no tool named '{name[:200]}' (its server may have removed it); list the tools again")
    return tool


@router.get("", response_model=ToolReviews)
async def list_tools(
    request: Request,
    user: UserDep,
    state: Annotated[State | None, Query(description="only tools in this state; none: every tool not approved")] = None,
) -> Response:
    """Tools by trust state, each with its pin, the approved pin, the field-by-field diff and the
    hidden characters found in its definition."""
    services = _admin(request, user)
    wanted = {state} if state is not None else {"pending", "changed", "blocked"}
    tools = sorted(
        (t for t in services.pool.registry.every_tool() if t.trust in wanted), key=lambda t: t.qualified_name
    )
    reviews = [r for r in (_review(services, t) for t in tools) if r is not None]
    return Response(b'{"tools":[' + b",".join(reviews) + b"]}", media_type="application/json")


@router.post("/{name}/approve")
async def approve_tool(request: Request, user: UserDep, name: str, body: Approval) -> Decided:
    """Approve exactly the definition with this pin: 409 when the tool's definition is no longer it
    (or another administrator decided on it at the same moment), 404 when the tool is gone."""
    services = _admin(request, user)
    return await _decide(services, user, name, "approve", body.pin)


@router.post("/{name}/block")
async def block_tool(request: Request, user: UserDep, name: str) -> Decided:
    """Block the tool, whatever its definition, until an administrator approves one."""
    services = _admin(request, user)
    tool = _tool(services, name)
    seen = services.pool.trust.seen(tool.server, tool.name)
    return await _decide(services, user, name, "block", seen[0] if seen else tool.definition_hash)


async def _decide(services: Services, user: User, name: str, kind: Literal["approve", "block"], pin: str) -> Decided:
    tool = _tool(services, name)
    decided = await services.pool.trust.decide(
        kind,
        server=tool.server,
        tool=tool.name,
        qualified_name=tool.qualified_name,
        pin=pin,
        by=user.email,
        before_state=tool.trust,
    )
    services.audit.record(
        "admin_action",
        action=f"tool_{kind}",
        user=decided.by,
        server=decided.server,
        tool=decided.qualified_name,
        pin=decided.pin,
        before_state=decided.before_state,
        before_pin=decided.before_pin,
        decision="allow",
    )
    now = _tool(services, name)
    return Decided(name=now.qualified_name, state=now.trust, pin=now.definition_hash)
