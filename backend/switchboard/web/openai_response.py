"""The OpenAI-compatible door's answers: a chat.completion, its errors in OpenAI's shape, and the
stream of chat.completion.chunk frames ending with `data: [DONE]`."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Literal, assert_never

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ..chat.events import ErrorEvent, MessageDone, TokenEvent
from ..errors import status_for_code
from .sse import ServerSentEvent, data_frame

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
    "error_detail",
    "openai_error",
    "usage_of",
]

FINISH = {"stop": "stop", "length": "length", "round_limit": "length", "cancelled": "stop"}
_ERROR_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_error",
}


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


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    error: ErrorDetail


Shown = TokenEvent | ErrorEvent | MessageDone  # what this door's client sees of a turn


def error_detail(status: int, code: str, message: str, action: str | None) -> ErrorDetail:
    text = f"{message}. {action}" if action else message
    return ErrorDetail(message=text, type=_ERROR_TYPE.get(status, "api_error"), code=code)


def openai_error(status: int, code: str, message: str, action: str | None = None) -> JSONResponse:
    return JSONResponse(ErrorBody(error=error_detail(status, code, message, action)).model_dump(), status_code=status)


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
                    detail = error_detail(status_for_code(event.code), event.code, event.message, event.action)
                    yield data_frame(ErrorBody(error=detail).model_dump_json())
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
