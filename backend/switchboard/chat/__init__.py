"""The conversation core: the tool-call loop, conversations and their turns,
approvals and the events."""

from .calls import CallRunner, CallSettings
from .conversations import ConversationLimits, Conversations
from .loop import ChatEngine
from .questions import ApprovalAnswer, Preferences
from .session import ConversationState
from .task_board import TaskBoard
from .tasks import TaskPoller, TaskSettings
from .turn_state import TurnLimits, TurnState
from .turns import Subscription, Turn, TurnHub, UserLimits

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
