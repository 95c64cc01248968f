"""A conversation as one turn sees it: who is asking, at which compliance
level, its history on the active branch, the files attached in it, the tools
allowed for it, and the questions (approvals, elicitations) a running turn
is waiting on.  Loaded from the store at the start of each turn
(`chat.conversations`), kept in memory only for an incognito conversation."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

from ..access import Access
from ..artifacts import StoredFile
from ..auth import User
from ..config.models import ComplianceLevels
from ..history import HistoryRecord

__all__ = ["ApprovalAnswer", "ChatSession", "new_id"]


def new_id() -> str:
    return secrets.token_urlsafe(12)


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    approved: bool
    arguments: dict[str, Any] | None = None
    remember: bool = False
    reason: str | None = None  # why it was refused, for the model (default: the user declined)


@dataclass
class ChatSession:
    user: User
    conversation_id: str = field(default_factory=new_id)
    history: list[HistoryRecord] = field(default_factory=list)
    compliance_level: str | None = None
    levels_used: list[str | None] = field(default_factory=list)  # every level the conversation ran at
    title: str = ""
    model: str | None = None
    saved_model: str | None = None  # the model the store has for it (written only when it changes)
    levels_changed: bool = False  # the compliance level changed in this turn (to be stored)
    stored: bool = False  # the store has it
    incognito: bool = False  # nothing of it is ever stored
    leaf_id: str | None = None  # the newest message of the active branch: the next one's parent
    allowed_tools: set[str] = field(default_factory=set)  # "allow for this conversation"
    files: dict[str, StoredFile] = field(default_factory=dict)  # uploads attached in this conversation
    turn_files: list[StoredFile] = field(default_factory=list)  # attached to the message being answered
    made_files: list[str] = field(default_factory=list)  # artifacts of an incognito conversation (deleted with it)
    branches: list[Any] = field(default_factory=list)  # every stored message, all branches (for edits)
    trimmed: int = 0  # oldest tool results left out of the model's view (context window)
    app_context: list[tuple[str, str]] = field(default_factory=list)  # (tool, text) MCP Apps gave the model
    _approvals: dict[str, asyncio.Future[ApprovalAnswer]] = field(default_factory=dict)
    _elicitations: dict[str, asyncio.Future[tuple[str, dict[str, Any] | None]]] = field(default_factory=dict)

    # Approvals and elicitations are keyed by ids the host made; an answer
    # for an id this conversation did not issue is refused.

    new_allowances: list[str] = field(default_factory=list)  # granted during this turn, not stored yet

    def access_with(self, compliance: ComplianceLevels) -> Access:
        return Access(user=self.user, compliance_level=self.compliance_level, compliance=compliance)

    def allow(self, key: str) -> None:
        """"Allow for this conversation": this tool definition runs unasked from now on."""
        if key not in self.allowed_tools:
            self.allowed_tools.add(key)
            self.new_allowances.append(key)

    def files_for_tools(self) -> list[StoredFile]:
        """The files a tool's file parameter may get: this message's, else the conversation's latest."""
        if self.turn_files:
            return self.turn_files
        return list(self.files.values())[-1:]

    def pending(self) -> tuple[set[str], set[str]]:
        return set(self._approvals), set(self._elicitations)

    def expect_approval(self, call_id: str) -> asyncio.Future[ApprovalAnswer]:
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self._approvals[call_id] = future
        return future

    def answer_approval(self, call_id: str, answer: ApprovalAnswer) -> bool:
        future = self._approvals.pop(call_id, None)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def forget_approval(self, call_id: str) -> None:
        self._approvals.pop(call_id, None)

    def expect_elicitation(self, request_id: str) -> asyncio.Future[tuple[str, dict[str, Any] | None]]:
        future: asyncio.Future[tuple[str, dict[str, Any] | None]] = asyncio.get_running_loop().create_future()
        self._elicitations[request_id] = future
        return future

    def answer_elicitation(self, request_id: str, action: str, content: dict[str, Any] | None) -> bool:
        future = self._elicitations.pop(request_id, None)
        if future is None or future.done():
            return False
        future.set_result((action, content))
        return True

    def forget_elicitation(self, request_id: str) -> None:
        self._elicitations.pop(request_id, None)
