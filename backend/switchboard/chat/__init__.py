"""The conversation core: the tool-call loop, conversations and their turns,
approvals and the events."""

from .calls import CallRunner, CallSettings
from .conversations import ConversationLimits, Conversations
from .loop import ChatEngine, TurnLimits, TurnState
from .session import ApprovalAnswer, ChatSession
from .task_board import TaskBoard
from .tasks import TaskPoller, TaskSettings
from .turns import Subscription, Turn, TurnHub, UserLimits

__all__ = [
    "ApprovalAnswer",
    "CallRunner",
    "CallSettings",
    "ChatEngine",
    "ChatSession",
    "ConversationLimits",
    "Conversations",
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
