"""One turn's own state, owned by the turn: who asks (the user as worked out for this turn), in
which conversation (a `ConversationState`), as its door prefers; the files of the message being
answered and the questions it waits on; what it has produced so far (read when it is stopped);
and its records not stored yet (`chat/recording.py` stores them once per round)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config.models import ComplianceLevels, ModelConfig
from ..files.artifacts import StoredFile
from ..history import HistoryRecord, UserText
from ..identity.access import Access
from ..identity.users import User
from ..llm.types import Completed, ToolCallRequest, Usage
from .calls.unfinished import StoppedBy
from .conversation_state import ConversationState
from .events import ErrorEvent, ServerEvent
from .growing import GrowingText
from .questions import ASK, Preferences, Questions

__all__ = ["PreparedTurn", "TurnLimits", "TurnState", "Unsaved"]


@dataclass(frozen=True, slots=True)
class TurnLimits:
    round_limit: int = 10
    calls_per_round: int = 32
    calls_per_turn: int = 128
    answer_chars: int = 200_000  # an answer is cut (finish_reason "length") past this
    render_interval_s: float = 0.25  # live `render` events at most this often


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    model: ModelConfig
    user: UserText | None  # None: regenerate the answer to the last user message
    user_data: dict[str, Any]
    prompt: str | None = None  # the prompt as a prompt_submit hook changed it


@dataclass(frozen=True, slots=True)
class Announcement:
    """Events that may go out only once a commit has stored what they announce; the turn goes on
    meanwhile (the next model request is sent), and its next event waits for these."""

    commit: asyncio.Future[Any]
    events: Callable[[Any], list[ServerEvent]]  # what to announce, given the commit's result
    first: bool = False  # the turn's first commit: if it fails, the turn ends there, unanswered

    async def due(self) -> list[ServerEvent]:
        """The events, once stored; raises the store's error. A turn stopped while it waits
        leaves the commit running (the turn's closing step announces it)."""
        if self.commit.cancelled():
            return []
        return self.events(await asyncio.shield(self.commit))


def retrieved(future: asyncio.Future[Any]) -> None:
    """For work nobody may wait for (the turn was stopped meanwhile): a failed commit is the
    next commit's to find (`ChatEngine.finish` stores what is left)."""
    if not future.cancelled():
        future.exception()


@dataclass(frozen=True, slots=True)
class Unsaved:
    record: HistoryRecord
    parent_id: str | None
    data: dict[str, Any]


@dataclass
class TurnState:
    user: User
    conversation: ConversationState
    preferences: Preferences = ASK
    questions: Questions = field(default_factory=Questions)
    model: str | None = None  # the model this turn runs on
    moved: str | None = None  # why a new conversation was started instead of the one asked for
    turn_files: list[StoredFile] = field(default_factory=list)  # attached to the message being answered
    trimmed: int = 0  # oldest tool results left out of the model's view (context window)
    # -- kept, not stored yet (chat/recording.py) --
    unsaved: list[Unsaved] = field(default_factory=list)
    new_allowances: list[str] = field(default_factory=list)  # granted during this turn
    levels_changed: bool = False  # the compliance level changed in this turn
    writing: asyncio.Future[None] | None = None  # the commit under way
    commit_timer: asyncio.TimerHandle | None = None  # a commit due later (`TurnRecorder.commit_later`)
    announcement: Announcement | None = None  # events waiting for a commit, sent before the turn's next event
    # The process whose claim on the conversation (store/live.py `live_turns`) the write of the
    # answer's last message releases, in its transaction; None once released (or never claimed).
    claim: str | None = None
    # -- what the turn has produced so far --
    message_id: str = field(default_factory=lambda: secrets.token_urlsafe(9))
    user_message_id: str | None = None
    answer: GrowingText = field(default_factory=lambda: GrowingText())  # the whole answer shown so far
    round_answer: GrowingText = field(
        default_factory=lambda: GrowingText()
    )  # its part from the model call now streaming
    open_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None
    calls_run: int = 0
    completed: Completed | None = None  # the last event of the model call just made
    tools_of_calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id -> (tool, server) it runs
    stopped_by: StoppedBy | None = None  # who ended the turn early, when it was stopped
    awaiting_approval: set[str] = field(default_factory=set)  # calls waiting for approval when it was stopped
    awaiting_answer: set[str] = field(default_factory=set)  # calls whose question to the user was open then
    error: ErrorEvent | None = None  # why the turn failed: stored with the answer, shown after a reload

    @property
    def conversation_id(self) -> str:
        return self.conversation.id

    @property
    def text(self) -> str:
        return self.answer.text()

    @property
    def round_text(self) -> str:
        return self.round_answer.text()

    def access_with(self, compliance: ComplianceLevels) -> Access:
        return Access(user=self.user, compliance_level=self.conversation.compliance_level, compliance=compliance)

    def allow(self, key: str) -> None:
        """ "Allow for this conversation": this tool definition runs unasked from now on."""
        if key not in self.conversation.allowed_tools:
            self.conversation.allowed_tools.add(key)
            self.new_allowances.append(key)
