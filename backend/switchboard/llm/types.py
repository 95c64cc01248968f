"""What the LLM layer gives the chat loop: provider-neutral stream events."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..config.models import ModelConfig
    from ..history import HistoryRecord

__all__ = ["Completed", "LLMEvent", "LLMStream", "Notice", "TextDelta", "ToolCallRequest", "Usage"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    id: str
    name: str  # the qualified tool name as the model sent it
    arguments: str  # raw JSON text, as assembled from the stream


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Completed:
    """The last event of one model call."""

    finish_reason: str  # "stop", "tool_calls", "length", ...
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None
    raw: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the user should know while they wait, e.g. that a failed call is
    being sent again. Carries no part of the answer."""

    code: str  # "llm_retry", "context_trimmed"
    message: str


LLMEvent = TextDelta | Completed | Notice


class LLMStream(Protocol):
    """What the chat loop needs of a model client: one streamed call over history records (or
    ready OpenAI messages)."""

    def stream(
        self,
        model: ModelConfig,
        messages: Sequence[HistoryRecord | dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        system: str = "",
    ) -> AsyncGenerator[LLMEvent, None]: ...
