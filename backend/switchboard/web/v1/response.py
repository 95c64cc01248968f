"""The OpenAI-compatible door's answers: a chat.completion, its errors in OpenAI's shape, and the
stream of chat.completion.chunk frames ending with `data: [DONE]`."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal, assert_never

from pydantic import BaseModel

from ...chat.events import ErrorEvent, MessageDone, TokenEvent
from ..error_render import ErrorBody, ErrorDetail, render
from ..sse import ServerSentEvent, data_frame

__all__ = [
    "FINISH",
    "ChatCompletion",
    "Choice",
    "ErrorBody",
    "ErrorDetail",
    "ModelCard",
    "ModelList",
    "OutputMessage",
    "Shown",
    "Usage",
    "completion_chunks",
    "usage_of",
]  # ErrorBody, ErrorDetail: from error_render

FINISH = {"stop": "stop", "length": "length", "round_limit": "length", "cancelled": "stop"}


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class OutputMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: OutputMessage
    finish_reason: str


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "switchboard"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


Shown = TokenEvent | ErrorEvent | MessageDone  # what this door's client sees of a turn


def usage_of(done: MessageDone) -> Usage:
    return Usage(**(done.usage or {}))


def _chunk(
    completion_id: str,
    created: int,
    model: str,
    delta: dict[str, Any],
    finish: str | None = None,
    usage: Usage | None = None,
) -> ServerSentEvent:
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage.model_dump()
    return data_frame(json.dumps(body))


async def completion_chunks(
    events: AsyncGenerator[Shown, None], completion_id: str, created: int, model: str, include_usage: bool
) -> AsyncIterator[ServerSentEvent]:
    yield _chunk(completion_id, created, model, {"role": "assistant", "content": ""})
    try:
        async for event in events:
            match event:
                case TokenEvent():
                    yield _chunk(completion_id, created, model, {"content": event.text})
                case ErrorEvent():
                    yield data_frame(render(event, "openai").json().decode())
                case MessageDone():
                    yield _chunk(completion_id, created, model, {}, FINISH.get(event.finish_reason, "stop"))
                    if include_usage:
                        yield _chunk(completion_id, created, model, {}, usage=usage_of(event))
                    break
                case _:
                    assert_never(event)
        yield data_frame("[DONE]")
    finally:
        await events.aclose()
