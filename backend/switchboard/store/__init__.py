"""The durable conversation store (SQLAlchemy async; SQLite by default, Postgres for teams)."""

from .migrate import upgrade
from .pages import MessagePage, Outline, page_of
from .records import Conversation, Message, StoredConversation, active_path, latest_leaf
from .repo import ConversationStore, down_store, open_store
from .turn_writes import UNSET, NewConversation, NewMessage

__all__ = [
    "UNSET",
    "Conversation",
    "ConversationStore",
    "Message",
    "MessagePage",
    "NewConversation",
    "NewMessage",
    "Outline",
    "StoredConversation",
    "active_path",
    "down_store",
    "latest_leaf",
    "open_store",
    "page_of",
    "upgrade",
]
