"""One turn's state, split by owner. `TurnState` itself is fixed for the turn: who asks (the user as
worked out for this turn), in which conversation (a `ConversationState`), as its door prefers, the
questions it waits on, and why it moved to a new conversation. It holds the parts each owner writes:
- `TurnProgress`, the loop's (chat/loop.py and its helpers): what the turn has produced so far,
  read when it is stopped;
- `PendingWrites`, the recorder's (chat/recording.py): records not stored yet (stored once per
  round), the commit under way and the claim the answer's write releases;
- `StopState`, the turn's stop (chat/turn.py): who stopped it and which calls waited for a person.
The events that wait for a commit (`Announcement`) are handed from a tool round to the loop as
values (chat/tool_round.py `run_calls` yields them), never kept here."""

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
from ..store.message_data import RoleData, UserData
from .calls.unfinished import StoppedBy
from .conversation_state import ConversationState
from .events import ErrorEvent, ServerEvent
from .growing import GrowingText
from .questions import ASK, Preferences, Questions
from .views.live_render import LiveRender

__all__ = [
    "Announcement",
    "PendingWrites",
    "PreparedTurn",
    "StopState",
    "TurnLimits",
    "TurnProgress",
    "TurnState",
    "Unsaved",
]


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
    user_data: UserData
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
    data: RoleData


@dataclass(slots=True)
class TurnProgress:
    """What the turn has produced so far; written by the loop (chat/loop.py, chat/tool_round.py,
    chat/closing.py) and the steps it calls (attachments, context)."""

    model: str | None = None  # the model this turn runs on, once resolved
    turn_files: list[StoredFile] = field(default_factory=list)  # attached to the message being answered
    trimmed: int = 0  # oldest tool results left out of the model's view (context window)
    user_message_id: str | None = None
    answer: GrowingText = field(default_factory=lambda: GrowingText())  # the whole answer shown so far
    round_answer: GrowingText = field(default_factory=lambda: GrowingText())  # from the model call now streaming
    # The live renders of the answer's first text (the whole answer then): the final HTML reuses them.
    live: LiveRender | None = None
    open_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None
    calls_run: int = 0
    completed: Completed | None = None  # the last event of the model call just made
    tools_of_calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id -> (tool, server) it runs
    error: ErrorEvent | None = None  # why the turn failed: stored with the answer, shown after a reload


@dataclass(slots=True)
class PendingWrites:
    """Kept, not stored yet; written by the recorder (chat/recording.py) alone, but for what the
    turn's start hands it (a changed compliance level, the claim)."""

    unsaved: list[Unsaved] = field(default_factory=list)
    new_allowances: list[str] = field(default_factory=list)  # granted during this turn
    levels_changed: bool = False  # the compliance level changed in this turn
    writing: asyncio.Future[None] | None = None  # the commit under way
    commit_timer: asyncio.TimerHandle | None = None  # a commit due later (`TurnRecorder.commit_later`)
    # The process whose claim on the conversation (store/live.py `live_turns`) the write of the
    # answer's last message releases, in its transaction; None once released (or never claimed).
    claim: str | None = None
    # Events waiting for a commit, sent before the turn's next event: the first commit's (set by the
    # loop at the start) or a round's last result (`run_calls` yields it to the loop). Kept here, not
    # in the loop, so that the closing step of a stopped turn still announces it.
    announcement: Announcement | None = None

    async def announced(self) -> list[ServerEvent]:
        """What waited for a commit, once it is stored (nothing when nothing waits); raises the
        store's error (the announcement stays: the loop's end finds it again)."""
        if self.announcement is None:
            return []
        events = await self.announcement.due()
        self.announcement = None
        return events


@dataclass(slots=True)
class StopState:
    """Set once, when the turn is stopped (chat/turn.py `Turn.stop`); read by its closing step."""

    stopped_by: StoppedBy | None = None  # who ended the turn early
    awaiting_approval: set[str] = field(default_factory=set)  # calls waiting for approval then
    awaiting_answer: set[str] = field(default_factory=set)  # calls whose question to the user was open then


@dataclass(frozen=True, slots=True)
class TurnState:
    user: User
    conversation: ConversationState
    preferences: Preferences = ASK
    questions: Questions = field(default_factory=Questions)
    moved: str | None = None  # why a new conversation was started instead of the one asked for
    message_id: str = field(default_factory=lambda: secrets.token_urlsafe(9))  # the answer's
    progress: TurnProgress = field(default_factory=TurnProgress)
    writes: PendingWrites = field(default_factory=PendingWrites)
    stop: StopState = field(default_factory=StopState)

    @property
    def conversation_id(self) -> str:
        return self.conversation.id

    @property
    def model(self) -> str | None:
        return self.progress.model

    @property
    def text(self) -> str:
        return self.progress.answer.text()

    @property
    def round_text(self) -> str:
        return self.progress.round_answer.text()

    def access_with(self, compliance: ComplianceLevels) -> Access:
        return Access(user=self.user, compliance_level=self.conversation.compliance_level, compliance=compliance)

    def allow(self, key: str) -> None:
        """ "Allow for this conversation": this tool definition runs unasked from now on."""
        if key not in self.conversation.allowed_tools:
            self.conversation.allowed_tools.add(key)
            self.writes.new_allowances.append(key)
