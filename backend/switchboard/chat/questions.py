"""The questions a running call asks a person (approvals, elicitations), and what a door wants
done with them (`Preferences`).

A door that has a person behind it (the page, the terminal client, `/api/chat`) asks; a door
that has none (`/v1`) refuses approvals with a reason the model reads, and declines questions.
The call runner consults the preferences before it asks: nothing parses events to answer them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ASK", "ApprovalAnswer", "Preferences", "Questions"]


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    approved: bool
    arguments: dict[str, Any] | None = None
    remember: bool = False
    reason: str | None = None  # why it was refused, for the model (default: the user declined)


@dataclass(frozen=True, slots=True)
class Preferences:
    """What a door (a connection, a request) wants of the turns it starts."""

    approvals: Literal["ask", "refuse"] = "ask"
    refusal: str = "Nobody can approve this call here, so it was not run."  # the model reads it (approvals="refuse")
    elicitations: Literal["ask", "decline"] = "ask"

    def refused(self) -> ApprovalAnswer | None:
        """The answer to every approval without asking, or None: ask the person."""
        return ApprovalAnswer(approved=False, reason=self.refusal) if self.approvals == "refuse" else None


ASK = Preferences()


@dataclass
class Questions:
    """The approvals and elicitations a turn (or an app's call) is waiting on, by the ids the host
    made; an answer for an id it did not issue is refused."""

    _approvals: dict[str, asyncio.Future[ApprovalAnswer]] = field(default_factory=dict)
    _elicitations: dict[str, asyncio.Future[tuple[str, dict[str, Any] | None]]] = field(default_factory=dict)

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
