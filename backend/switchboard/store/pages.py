"""Reading a long conversation a page at a time.

The outline of a conversation (every message's id, parent, seq and size, without its text) is
small; from it the active branch, its branch points and the page are worked out, and only the
page's messages are read whole. A reader of an 8 MB conversation holds one page, not the
conversation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Text, bindparam, cast, func, select

from ..errors import NotFound
from ._base import StoreBase
from .models import messages
from .records import Message
from .rows import message_of

__all__ = ["MessagePage", "Outline", "PagedReads", "page_of"]

_m = messages.c
_OUTLINE = (
    select(_m.id, _m.parent_id, _m.seq, (func.length(_m.content) + func.length(cast(_m.data, Text))).label("size"))
    .where(_m.conversation_id == bindparam("cid"))
    .order_by(_m.seq)
)


@dataclass(frozen=True, slots=True)
class Outline:
    """A message without its text (enough for `active_path`, `latest_leaf` and paging)."""

    id: str
    parent_id: str | None
    seq: int
    size: int  # characters of its text and data


@dataclass(frozen=True, slots=True)
class MessagePage:
    ids: list[str]  # on the active branch, oldest first
    has_more: bool  # older messages of the branch come before the first one


def page_of(
    outline: Sequence[Outline], leaf_id: str | None, *, before: str | None, limit: int, max_chars: int
) -> MessagePage:
    """The newest messages of the branch ending at `leaf_id` (older than `before`, a message of
    that branch, when given): at most `limit`, and no more than `max_chars` (one at least)."""
    by_id = {m.id: m for m in outline}
    path: list[Outline] = []
    current = by_id.get(leaf_id) if leaf_id else None
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)  # newest first
        current = by_id.get(current.parent_id) if current.parent_id else None
    if before is not None:
        index = next((i for i, m in enumerate(path) if m.id == before), None)
        if index is None:
            raise NotFound(
                f"there is no message '{before}' on this conversation's shown branch",
                action="Page with the id of the first message of the page you have.",
            )
        path = path[index + 1 :]
    taken: list[str] = []
    chars = 0
    for message in path:
        if len(taken) >= limit or (taken and chars + message.size > max_chars):
            break
        taken.append(message.id)
        chars += message.size
    taken.reverse()
    return MessagePage(taken, len(taken) < len(path))


class PagedReads(StoreBase):
    """The store's reads for paging (mixed into ConversationStore)."""

    async def outline(self, conversation_id: str) -> list[Outline]:
        """Every message of every branch without its text, in the order written."""

        def work(conn: Connection) -> list[Outline]:
            rows = conn.execute(_OUTLINE, {"cid": conversation_id}).mappings()
            return [Outline(r["id"], r["parent_id"], r["seq"], int(r["size"] or 0)) for r in rows]

        return await self.read("read the conversation's outline", work)

    async def messages_by_id(self, conversation_id: str, ids: Sequence[str]) -> list[Message]:
        """These messages of the conversation, in the order written."""
        if not ids:
            return []
        stmt = select(messages).where(_m.conversation_id == conversation_id, _m.id.in_(list(ids))).order_by(_m.seq)

        def work(conn: Connection) -> list[Message]:
            return [message_of(row) for row in conn.execute(stmt).mappings()]

        return await self.read("read the conversation's messages", work)
