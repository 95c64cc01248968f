"""A conversation's history as typed, provider-neutral records.

The chat layer keeps and stores these; the LLM layer alone turns them into a
provider's message format (`llm.messages.to_openai`).  Trimming a history to
fit a context window is a view (`trimmed`), never an edit of the records."""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["TRIMMED_TOOL_RESULT", "AssistantText", "CallRecord", "HistoryRecord", "ToolReply", "UserText", "trimmed"]

TRIMMED_TOOL_RESULT = "[older tool result removed to fit the model's context window]"


@dataclass(frozen=True, slots=True)
class UserText:
    id: str
    text: str  # what the user typed
    context: str = ""  # what the host added: attached files, resources (never the model's instructions)

    @property
    def model_text(self) -> str:
        return self.text + self.context


@dataclass(frozen=True, slots=True)
class CallRecord:
    call_id: str  # made by the host: unique, also what the model sees from then on
    name: str  # the qualified tool name the model asked for
    arguments: str  # raw JSON text


@dataclass(frozen=True, slots=True)
class AssistantText:
    id: str
    text: str
    calls: tuple[CallRecord, ...] = ()
    finish_reason: str | None = None  # set on the last message of an answer


@dataclass(frozen=True, slots=True)
class ToolReply:
    id: str
    call_id: str
    tool: str
    server: str
    ok: bool
    text: str  # what the model sees (framed as data)
    late: bool = False  # a background task's result, added after the turn that started it had ended


HistoryRecord = UserText | AssistantText | ToolReply


def trimmed(history: list[HistoryRecord], count: int) -> list[HistoryRecord]:
    """The history with the `count` oldest tool results replaced by a short note."""
    if count <= 0:
        return history
    out: list[HistoryRecord] = []
    for record in history:
        if count and isinstance(record, ToolReply):
            record = replace(record, text=TRIMMED_TOOL_RESULT)
            count -= 1
        out.append(record)
    return out
