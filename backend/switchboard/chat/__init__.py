"""The tool-call loop, the per-connection session, approvals and the events."""

from .calls import CallRunner, CallSettings
from .loop import ChatEngine, TurnState
from .session import ApprovalAnswer, ChatSession

__all__ = ["ApprovalAnswer", "CallRunner", "CallSettings", "ChatEngine", "ChatSession", "TurnState"]
