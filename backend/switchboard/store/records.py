"""What the store hands out: frozen records, and pure functions over a conversation's tree.

Messages form a tree by ``parent_id`` (an edit starts a new branch; the old one is kept). The
conversation's ``leaf_id`` names the branch shown; ``active_path`` walks it from the root."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .message_data import MessageData

__all__ = ["Conversation", "Message", "Role", "StoredConversation", "active_path", "latest_leaf"]

Role = Literal["user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    owner: str
    title: str
    model: str | None
    compliance_level: str | None
    levels_used: tuple[str | None, ...]
    leaf_id: str | None
    message_count: int
    created_at: datetime
    updated_at: datetime
    data_version: int = 0  # moves when a message changes in place (messages are otherwise only added)

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "model": self.model,
            "compliance_level": self.compliance_level,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "message_count": self.message_count,
        }


_MESSAGE_FIELDS = frozenset({"id", "parent_id", "role", "content", "created_at"})


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    conversation_id: str
    parent_id: str | None
    seq: int
    role: Role
    content: str
    data: MessageData  # its keys per role: message_data.py
    created_at: datetime

    def to_api(self) -> dict[str, Any]:
        """``{id, parent_id, role, content, created_at, **data}``; the record's own fields win over
        same-named keys in ``data``."""
        out: dict[str, Any] = {
            "id": self.id,
            "parent_id": self.parent_id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
        }
        out.update((k, v) for k, v in self.data.items() if k not in _MESSAGE_FIELDS)
        return out


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """A conversation with everything a turn needs of it, read in one transaction."""

    conversation: Conversation
    messages: list[Message]  # every branch, in the order written (those after `after`'s seq when given)
    allowances: set[str]
    files: list[str]  # linked file ids, sorted


def active_path(messages: Iterable[Message], leaf_id: str | None) -> list[Message]:
    """The branch ending at ``leaf_id``, root first; empty when the leaf is unknown."""
    by_id = {m.id: m for m in messages}
    path: list[Message] = []
    seen: set[str] = set()
    current = by_id.get(leaf_id) if leaf_id else None
    while current is not None and current.id not in seen:  # `seen` guards against a corrupt cycle
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    return path


def latest_leaf(messages: Sequence[Message], message_id: str) -> str:
    """The newest leaf (by seq) below ``message_id``; the message itself when nothing follows it.

    A child is always written after its parent, so the descendant with the highest seq is a leaf."""
    children: dict[str, list[Message]] = {}
    for m in messages:
        if m.parent_id is not None:
            children.setdefault(m.parent_id, []).append(m)
    best_id, best_seq = message_id, -1
    stack, seen = [message_id], {message_id}
    while stack:
        for child in children.get(stack.pop(), ()):
            if child.id in seen:
                continue
            seen.add(child.id)
            stack.append(child.id)
            if child.seq > best_seq:
                best_id, best_seq = child.id, child.seq
    return best_id
