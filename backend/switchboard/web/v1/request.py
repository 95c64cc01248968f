"""The OpenAI-compatible door's request: its wire models, and its messages as a conversation's
history (the earlier messages as records, the last one the question)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...chat.conversation_state import new_id
from ...chat.events import MAX_CONTENT_CHARS
from ...errors import BadRequest
from ...history import AssistantText, HistoryRecord, UserText

__all__ = ["CompletionRequest", "ContentPart", "InputMessage", "StreamOptions", "history_of", "message_text"]


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class InputMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None


class StreamOptions(BaseModel):
    include_usage: bool = False


class CompletionRequest(BaseModel):
    """OpenAI's chat-completions request.  Sampling parameters (temperature, ...) are
    accepted and not used: the model's settings come from the host's configuration."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(max_length=200, description="a Switchboard model name (GET /v1/models)")
    messages: list[InputMessage] = Field(min_length=1, max_length=1000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[dict[str, Any]] | None = Field(
        default=None,
        description="leave out for every MCP tool you may use; [] for none. "
        "Function definitions of the client's own are not supported.",
    )
    compliance_level: str | None = Field(
        default=None,
        max_length=100,
        description="the compliance level the answer runs at (only models and tools "
        "allowed at it); also the X-Switchboard-Compliance-Level header",
    )


def message_text(message: InputMessage, index: int) -> str:
    if message.content is None or isinstance(message.content, str):
        text = message.content or ""
    elif any(part.type != "text" for part in message.content):
        raise BadRequest("only text content is supported", action="Send message content as text.")
    else:
        text = "".join(part.text or "" for part in message.content)
    if len(text) > MAX_CONTENT_CHARS:
        raise BadRequest(
            f"messages[{index}] has {len(text):,} characters; the limit is {MAX_CONTENT_CHARS:,}",
            action="Send a shorter message, or split the text over several requests.",
        )
    return text


def history_of(messages: list[InputMessage]) -> tuple[list[HistoryRecord], str]:
    """(the earlier messages as records, the question)."""
    *earlier, last = messages
    if last.role != "user":
        raise BadRequest("the last message must be the user's question", action="End `messages` with a user message.")
    records: list[HistoryRecord] = []
    for index, message in enumerate(earlier):
        if message.role in ("tool", "function") or getattr(message, "tool_calls", None):
            raise BadRequest(
                "tool calls of the client's own are not supported",
                action="Switchboard runs its own MCP tools; send only system, user and assistant text.",
            )
        text = message_text(message, index)
        if message.role in ("system", "developer"):
            # The host keeps its own system prompt; the client's instructions travel as a user message.
            records.append(UserText(id=new_id(), text=f"Instructions from the API client:\n{text}"))
        elif message.role == "user":
            records.append(UserText(id=new_id(), text=text))
        else:
            records.append(AssistantText(id=new_id(), text=text, finish_reason="stop"))
    return records, message_text(last, len(earlier))
