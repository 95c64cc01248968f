"""The store's side of MCP Apps: find a user's tool message by its call id (an app is mounted
for one call), and change what is kept with it (the app's context for the model, the calls
the app made)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, select, update

from ..errors import NotFound
from ._base import StoreBase
from .message_data import MessageData, stored_data
from .models import conversations, messages
from .records import Conversation, Message
from .rows import conversation_of, message_of

__all__ = ["AppCallQueries"]


class AppCallQueries(StoreBase):
    async def find_tool_call(self, owner: str, call_id: str) -> tuple[Conversation, Message] | None:
        """The owner's tool message of this call (with its conversation); None for anyone else.
        Looks through the owner's conversations only."""
        query = (
            select(messages, conversations.c.owner)
            .join(conversations, conversations.c.id == messages.c.conversation_id)
            .where(
                conversations.c.owner == owner,
                messages.c.role == "tool",
                messages.c.data["call_id"].as_string() == call_id,
            )
            .limit(1)
        )

        def work(conn: Connection) -> tuple[Conversation, Message] | None:
            row = conn.execute(query).mappings().first()
            if row is None:
                return None
            found = conn.execute(select(conversations).where(conversations.c.id == row["conversation_id"]))
            return conversation_of(found.mappings().one()), message_of(row)

        return await self.read("find the tool call", work)

    async def change_message_data(
        self, conversation_id: str, message_id: str, change: Callable[[MessageData], MessageData]
    ) -> MessageData:
        """Replace a message's `data` with `change(data)`, in one transaction; the new data."""
        query = (
            select(messages.c.data)
            .where(messages.c.id == message_id, messages.c.conversation_id == conversation_id)
            .with_for_update()
        )

        def work(conn: Connection) -> MessageData:
            current = conn.execute(query).scalar_one_or_none()
            if current is None:
                raise NotFound(f"there is no message '{message_id}' in conversation '{conversation_id}'")
            data = change(stored_data(current))
            conn.execute(update(messages).where(messages.c.id == message_id).values(data=data))
            conn.execute(
                update(conversations)
                .where(conversations.c.id == conversation_id)
                .values(data_version=conversations.c.data_version + 1)
            )
            return data

        return await self.transaction("save the app's data", work)
