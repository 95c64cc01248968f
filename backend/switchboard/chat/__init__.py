"""The conversation core: the tool-call loop, conversations and their turns,
approvals and the events.

Names are imported on first use: `switchboard.chat.events` (the wire models, which the
terminal client reads too) loads without the engine, the store or the MCP client."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

if TYPE_CHECKING:
    from .calls.runner import CallRunner, CallSettings
    from .conversation_state import ConversationState
    from .conversations import ConversationLimits, Conversations
    from .loop import ChatEngine
    from .questions import ApprovalAnswer, Preferences
    from .tasks.board import TaskBoard
    from .tasks.poller import TaskPoller, TaskSettings
    from .turn_state import TurnLimits, TurnState
    from .turns import Subscription, Turn, TurnHub, UserLimits

_HOME = {
    "CallRunner": "calls.runner",
    "CallSettings": "calls.runner",
    "ConversationLimits": "conversations",
    "Conversations": "conversations",
    "ChatEngine": "loop",
    "TurnLimits": "turn_state",
    "TurnState": "turn_state",
    "ApprovalAnswer": "questions",
    "Preferences": "questions",
    "ConversationState": "conversation_state",
    "TaskBoard": "tasks.board",
    "TaskPoller": "tasks.poller",
    "TaskSettings": "tasks.poller",
    "Subscription": "turns",
    "Turn": "turns",
    "TurnHub": "turns",
    "UserLimits": "turns",
}

__all__ = [
    "ApprovalAnswer",
    "CallRunner",
    "CallSettings",
    "ChatEngine",
    "ConversationLimits",
    "ConversationState",
    "Conversations",
    "Preferences",
    "Subscription",
    "TaskBoard",
    "TaskPoller",
    "TaskSettings",
    "Turn",
    "TurnHub",
    "TurnLimits",
    "TurnState",
    "UserLimits",
]
assert sorted(__all__) == sorted(_HOME)  # one list of names, kept in step with where each lives


__getattr__ = lazy_names(__name__, _HOME)
