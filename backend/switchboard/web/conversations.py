"""Stored conversations over HTTP: list and search, read, rename, switch
branch, delete (with their files), export.  Only the owner sees one; anyone
else gets 404, as for a conversation that does not exist.  A conversation is
read a page at a time (the newest messages of its shown branch first), so a
long one costs a reader one page of memory, not the whole conversation."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ..chat.views.markdown import export_filename, export_markdown
from ..chat.views.stored import export_json, page_view, siblings_of
from ..errors import BadRequest, NotFound
from ..identity.users import User
from ..store import Conversation, latest_leaf, page_of
from .deps import current_user, services_of

__all__ = ["router"]

router = APIRouter(prefix="/api/conversations", tags=["conversations"])
UserDep = Annotated[User, Depends(current_user)]


class ConversationPatch(BaseModel):
    title: str | None = Field(default=None, min_length=1, max_length=200)
    branch: str | None = Field(
        default=None, max_length=64, description="a message id: show the newest branch through it"
    )


PAGE_MESSAGES = 200  # messages per page of GET /api/conversations/{id} by default
MAX_PAGE_MESSAGES = 1000
PAGE_CHARS = 2_000_000  # and no more text than this per page (one message at least)


async def _owned(request: Request, user: User, conversation_id: str) -> Conversation:
    return await services_of(request).conversations.find(user, conversation_id)


async def _view(
    request: Request, conversation: Conversation, *, before: str | None = None, limit: int = PAGE_MESSAGES
) -> dict[str, Any]:
    """The conversation with a page of its active branch: the newest `limit` messages (older than
    `before`), `has_more` when older ones come before them."""
    store = services_of(request).store
    outline = await store.outline(conversation.id)
    page = page_of(outline, conversation.leaf_id, before=before, limit=limit, max_chars=PAGE_CHARS)
    by_id = {m.id: m for m in await store.messages_by_id(conversation.id, page.ids)}
    path = [by_id[i] for i in page.ids if i in by_id]
    view = await asyncio.to_thread(page_view, conversation, path, siblings_of(outline))
    view["has_more"] = page.has_more
    view["running"] = services_of(request).turns.running(conversation.owner, conversation.id) is not None
    return view


_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*|\s*[-+]?(inf|nan|infinity)\s*", re.IGNORECASE)
_DATE_TIME = TypeAdapter(datetime)


def _date_time(text: str) -> datetime:
    """An RFC 3339 date-time with a time zone, as the document declares (not a number of seconds,
    which pydantic would also take)."""
    bad = BadRequest("`before` is a date-time with a time zone", action="Pass the `updated_at` of the last one shown.")
    if _NUMBER.fullmatch(text):
        raise bad
    try:
        when = _DATE_TIME.validate_python(text)
    except ValidationError:
        raise bad from None
    if when.tzinfo is None:
        raise bad
    return when


@router.get("")
async def list_conversations(
    request: Request,
    user: UserDep,
    q: str | None = Query(default=None, max_length=200),
    limit: int = Query(default=50, ge=1, le=200),
    before: str | None = Query(default=None, max_length=64, json_schema_extra={"format": "date-time"}),
) -> dict[str, list[dict[str, Any]]]:
    """The caller's conversations, newest first; `q` searches titles and message text."""
    found = await services_of(request).store.list_conversations(
        user.email, q=q, limit=limit, before=None if before is None else _date_time(before)
    )
    return {"conversations": [c.to_api() for c in found]}


@router.get("/{conversation_id}")
async def get_conversation(
    request: Request,
    user: UserDep,
    conversation_id: str,
    limit: int = Query(default=PAGE_MESSAGES, ge=1, le=MAX_PAGE_MESSAGES),
    before: str | None = Query(default=None, max_length=64),
) -> dict[str, Any]:
    """The conversation with the newest messages of its shown branch, oldest first (a page:
    at most `limit`, and about 2 MB of text). `has_more`: older ones exist; ask again with
    `before` = the first message's id."""
    return await _view(request, await _owned(request, user, conversation_id), before=before, limit=limit)


@router.patch("/{conversation_id}")
async def patch_conversation(
    request: Request, user: UserDep, conversation_id: str, body: ConversationPatch
) -> dict[str, Any]:
    """Rename (`title`) or switch to another branch (`branch`: a message id)."""
    store = services_of(request).store
    conversation = await _owned(request, user, conversation_id)
    if body.title is not None:
        conversation = await store.update_conversation(conversation.id, title=" ".join(body.title.split()))
    if body.branch is not None:
        if services_of(request).turns.running(user.email, conversation.id) is not None:
            raise BadRequest("an answer is still being written here", action="Wait for it to finish, or stop it first.")
        outline = await store.outline(conversation.id)
        if not any(m.id == body.branch for m in outline):
            raise NotFound(f"there is no message '{body.branch}' in this conversation")
        conversation = await store.update_conversation(conversation.id, leaf_id=latest_leaf(outline, body.branch))  # type: ignore[arg-type]
    return await _view(request, conversation)


@router.delete("/{conversation_id}", status_code=204)
async def delete_conversation(request: Request, user: UserDep, conversation_id: str) -> Response:
    """The conversation, its messages, and the files attached to or made in it."""
    services = services_of(request)
    conversation_id = (await _owned(request, user, conversation_id)).id
    await services.turns.cancel(user, conversation_id)
    messages = await services.store.messages(conversation_id)
    artifacts = [a["id"] for m in messages if m.role == "tool" for a in m.data.get("artifacts", [])]
    uploads = await services.store.delete_conversation(conversation_id)
    for file_id in {*artifacts, *uploads}:
        await asyncio.to_thread(services.artifacts.delete, file_id, owner=user.email)
    return Response(status_code=204)


@router.get("/{conversation_id}/export")
async def export_conversation(
    request: Request, user: UserDep, conversation_id: str, format: Literal["md", "json"] = "md"
) -> Response:
    conversation = await _owned(request, user, conversation_id)
    conversation_id = conversation.id
    messages = await services_of(request).store.messages(conversation_id)
    if format == "json":
        body, media = await asyncio.to_thread(export_json, conversation, messages), "application/json"
    else:
        body, media = await asyncio.to_thread(export_markdown, conversation, messages), "text/markdown; charset=utf-8"
    plain, full = export_filename(conversation, format)  # named by its title (RFC 6266: both forms)
    disposition = f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(full, safe='')}"
    return Response(body, media_type=media, headers={"Content-Disposition": disposition})
