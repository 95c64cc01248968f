"""One websocket connection's conversation: history, pending approvals and
elicitations, per-conversation tool allowances, and the running turn."""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any

from ..artifacts import StoredFile
from ..auth import User

__all__ = ["ApprovalAnswer", "ChatSession"]


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    approved: bool
    arguments: dict[str, Any] | None = None
    remember: bool = False


@dataclass
class ChatSession:
    user: User
    conversation_id: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    history: list[dict[str, Any]] = field(default_factory=list)
    compliance_level: str | None = None
    allowed_tools: set[str] = field(default_factory=set)  # "allow for this conversation"
    files: dict[str, StoredFile] = field(default_factory=dict)  # uploads attached in this conversation
    turn_files: list[StoredFile] = field(default_factory=list)  # attached to the message being answered
    _approvals: dict[str, asyncio.Future[ApprovalAnswer]] = field(default_factory=dict)
    _elicitations: dict[str, asyncio.Future[tuple[str, dict[str, Any] | None]]] = field(default_factory=dict)

    # Approvals and elicitations are keyed by ids the server made; an answer
    # for an id this session did not issue is refused (it may belong to
    # another connection or user).

    def files_for_tools(self) -> list[StoredFile]:
        """The files a tool's file parameter may get: this message's, else the conversation's latest."""
        if self.turn_files:
            return self.turn_files
        return list(self.files.values())[-1:]

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
