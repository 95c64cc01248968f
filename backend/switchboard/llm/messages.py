"""History records to the OpenAI chat format that litellm (and every
OpenAI-compatible provider) takes.  The only place that knows that format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from switchboard.history import AssistantText, HistoryRecord, ToolReply, UserText

__all__ = ["to_openai"]

CANCELLED_NOTE = "[cancelled by the user]"
LATE_NOTE = "The background task has finished:"


def to_openai(system: str, history: Sequence[HistoryRecord | dict[str, Any]]) -> list[dict[str, Any]]:
    """The system prompt and the records as OpenAI messages (dicts pass through:
    e.g. the messages of an MCP sampling request)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for record in history:
        if isinstance(record, UserText):
            messages.append({"role": "user", "content": record.model_text})
        elif isinstance(record, AssistantText):
            text = record.text
            if record.finish_reason == "cancelled":
                text = f"{text}\n\n{CANCELLED_NOTE}" if text.strip() else CANCELLED_NOTE
            if not text and not record.calls:
                continue  # an answer that produced nothing (e.g. an error before any text)
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if record.calls:
                message["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in record.calls
                ]
            messages.append(message)
        elif isinstance(record, ToolReply) and record.late:
            # The call was answered ("started as a task") in its own turn; a provider takes a tool
            # message only right after the call, so the finished task's result comes as a note.
            messages.append(
                {"role": "user", "content": f"[{LATE_NOTE} {record.tool} (call {record.call_id})]\n{record.text}"}
            )
        elif isinstance(record, ToolReply):
            messages.append({"role": "tool", "tool_call_id": record.call_id, "content": record.text})
        else:
            messages.append(record)
    return messages
