"""The conversation core: the tool-call loop, conversations and their turns,
approvals and the events."""

from .calls import CallRunner, CallSettings
from .conversations import ConversationLimits, Conversations
from .loop import ChatEngine, TurnLimits, TurnState
from .session import ApprovalAnswer, ChatSession
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
    "Turn",
    "TurnHub",
    "TurnLimits",
    "TurnState",
    "UserLimits",
]
