"""A conversation as the store keeps it, as one value: its id and owner, title, model,
compliance levels, history on the active branch (and every branch, for edits), the files
attached in it and the tools allowed in it.  `Conversations` loads it at the start of a turn
and a turn's records save it; an incognito conversation is kept in memory instead
(`IncognitoMemory`).  What one turn needs beyond it lives in the turn (`TurnState`), and what
a door wants of its turns in its `Preferences` (chat/questions.py)."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from ..files.artifacts import StoredFile
from ..history import HistoryRecord

__all__ = ["ConversationState", "Seed", "new_id"]


def new_id() -> str:
    """A new id for a conversation, a message or a task: 24 URL-safe characters, the time first
    (milliseconds, 12 lowercase hex digits: ids sort by when they were made, in any collation) and
    72 random bits after. The store's indexes on ids then take new rows at their end, not on a
    random page: on a large store each write touches fewer pages (docs/benchmarks.md §27)."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_urlsafe(9)}"


@dataclass
class ConversationState:
    owner: str
    id: str = field(default_factory=new_id)
    title: str = ""
    model: str | None = None  # the model the store has for it
    compliance_level: str | None = None
    levels_used: list[str | None] = field(default_factory=list)  # every level the conversation ran at
    leaf_id: str | None = None  # the newest message of the active branch: the next one's parent
    history: list[HistoryRecord] = field(default_factory=list)  # the active branch, oldest first
    branches: list[Any] = field(default_factory=list)  # every stored message, all branches (for edits)
    allowed_tools: set[str] = field(default_factory=set)  # "allow for this conversation"
    files: dict[str, StoredFile] = field(default_factory=dict)  # uploads attached in this conversation
    app_context: list[tuple[str, str]] = field(default_factory=list)  # (tool, text) MCP Apps gave the model
    stored: bool = False  # the store has it
    incognito: bool = False  # nothing of it is ever stored
    made_files: list[str] = field(default_factory=list)  # artifacts of an incognito conversation (deleted with it)


@dataclass(frozen=True, slots=True)
class Seed:
    """A conversation a request brings whole (an OpenAI-style request sends its history each
    time): it lives for one turn, never stored and never kept in memory; its files go with it."""

    history: tuple[HistoryRecord, ...] = ()
    compliance_level: str | None = None

    def start(self, owner: str) -> ConversationState:
        return ConversationState(
            owner=owner,
            incognito=True,
            history=list(self.history),
            compliance_level=self.compliance_level,
            levels_used=[self.compliance_level],
            leaf_id=self.history[-1].id if self.history else None,
        )
