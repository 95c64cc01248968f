"""Rows of the store's tables as records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .message_data import stored_data
from .records import Conversation, Message

__all__ = ["conversation_of", "message_of"]


def conversation_of(row: Mapping[Any, Any]) -> Conversation:
    return Conversation(
        id=row["id"],
        owner=row["owner"],
        title=row["title"],
        model=row["model"],
        compliance_level=row["compliance_level"],
        levels_used=tuple(row["levels_used"] or ()),
        leaf_id=row["leaf_id"],
        message_count=row["message_count"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        data_version=row.get("data_version", 0),
    )


def message_of(row: Mapping[Any, Any]) -> Message:
    return Message(
        id=row["id"],
        conversation_id=row["conversation_id"],
        parent_id=row["parent_id"],
        seq=row["seq"],
        role=row["role"],
        content=row["content"],
        data=stored_data(row["data"]),
        created_at=row["created_at"],
    )
