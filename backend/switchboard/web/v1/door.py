"""The OpenAI-compatible door: `GET /v1/models`, `POST /v1/chat/completions`.

A request runs as one turn of an incognito conversation (nothing stored) whose
history is the request's earlier messages; the last message, a user's, is the
question.  The host's tool loop runs with the caller's MCP tools (every tool
the caller may use; none with `tools: []`) under every check the page gets.
The client sees only the final answer.  No one is there to approve: a call
that needs approval is refused at once (the tool does not run, and the model is
told why); a tool's question (elicitation) is declined.

The whole request is checked before anything is kept. The turn runs at the
request's compliance level (`compliance_level`, or the `X-Switchboard-Compliance-Level`
header), with only the models and tools allowed at it. The conversation lives
only while its turn runs: its files (tools' artifacts) are deleted when it ends.

The request's wire models and its messages as history are openai_request.py; the answer's
shapes (a completion, chunks, errors) openai_response.py."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Annotated, Any, assert_never

from fastapi import APIRouter, Depends, Header, Request
from pydantic import ValidationError

from ...chat import Preferences, Subscription
from ...chat.conversation_state import Seed, new_id
from ...chat.events import (
    PAGE_ONLY,
    ApprovalRequest,
    ChatMessage,
    ElicitationRequest,
    ErrorEvent,
    MessageDone,
    NoticeEvent,
    TaskEvent,
    TokenEvent,
    ToolProgress,
    ToolResultEvent,
    ToolStart,
)
from ...errors import BadRequest, NotFound, SwitchboardError
from ...identity.access import Access
from ...identity.users import User
from ..deps import current_user, services_of
from ..error_render import ErrorBody, render
from ..sse import EventStreamResponse
from .request import CompletionRequest, history_of
from .response import (
    FINISH,
    ChatCompletion,
    Choice,
    ModelCard,
    ModelList,
    OutputMessage,
    Shown,
    completion_chunks,
    usage_of,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["openai"])
UserDep = Annotated[User, Depends(current_user)]
LEVEL_HEADER = "X-Switchboard-Compliance-Level"
LevelHeader = Annotated[
    str | None,
    Header(alias=LEVEL_HEADER, max_length=100, description="the compliance level to run at (the body's field wins)"),
]

REFUSED_APPROVAL = (
    "This tool needs the user's approval, and nobody can approve calls made through the "
    "OpenAI-compatible API, so it was not run. Answer without it, or tell the user to ask in "
    "Switchboard's page."
)
# Nobody can answer a question on this door: approvals are refused (the model reads why) and a
# tool's questions declined, by the turn's own policy (chat/questions.py).
NOBODY_TO_ASK = Preferences(approvals="refuse", refusal=REFUSED_APPROVAL, elicitations="decline")


# -- the request as a turn ------------------------------------------------------------------------


def _level(request: Request, body_level: str | None, header_level: str | None) -> str | None:
    """The compliance level asked for (the body's, else the header's); BadRequest when unknown."""
    level = body_level if body_level is not None else header_level
    if level is not None and level.strip() == "":
        level = None
    names = services_of(request).config.compliance.names
    if level is not None and level not in names:
        raise BadRequest(f"unknown compliance level '{level}'", action=f"Use one of: {', '.join(names) or '(none)'}.")
    return level


async def _start(request: Request, user: User, body: CompletionRequest, level: str | None) -> Subscription:
    """Check the whole request, then start its turn; nothing is kept for a refused request."""
    services = services_of(request)
    if body.tools:
        raise BadRequest(
            "function definitions of the client's own are not supported",
            action="Leave `tools` out to use your MCP tools in Switchboard, or send [] for none.",
        )
    entries = services.models.entries(Access(user, level, services.config.compliance))
    usable = [m.name for m in entries if m.available]
    if body.model not in usable:
        at_level = f" at compliance level {level}" if level is not None else ""
        why = next((f"model '{m.name}' is not available: {m.reason}" for m in entries if m.name == body.model), None)
        raise NotFound(
            why or f"there is no model named '{body.model}' for you{at_level}",
            action=f"Use one of: {', '.join(usable) or '(none)'} (GET /v1/models).",
        )
    history, question = history_of(body.messages)
    try:
        message = ChatMessage(
            type="chat", content=question, model=body.model, incognito=True, tools=[] if body.tools == [] else None
        )
    except ValidationError as exc:
        raise BadRequest(f"the question is malformed ({exc.errors()[0]['msg']})") from None
    seed = Seed(history=tuple(history), compliance_level=level)
    return await services.turns.start(user, message, new_id(), preferences=NOBODY_TO_ASK, seed=seed)


async def _events(subscription: Subscription) -> AsyncGenerator[Shown, None]:
    """The turn's events that make the answer; the rest are not shown (the client sees only the
    answer). Approvals and questions never wait here: the turn's preferences refuse and decline
    them (NOBODY_TO_ASK)."""
    events = aiter(subscription)
    try:
        async for event in events:
            if isinstance(event, PAGE_ONLY):
                continue
            match event:
                case TokenEvent() | ErrorEvent() | MessageDone():
                    yield event
                case (
                    ApprovalRequest()
                    | ElicitationRequest()
                    | ToolStart()
                    | ToolProgress()
                    | ToolResultEvent()
                    | NoticeEvent()
                    | TaskEvent()
                ):
                    pass  # the tool loop's progress: this door's client sees only the answer
                case _:
                    assert_never(event)
    finally:
        await events.aclose()


# -- routes --------------------------------------------------------------------------------------


@router.get("/models")
async def list_models(request: Request, user: UserDep, level: LevelHeader = None) -> ModelList:
    """The models you may use (at the compliance level of the header, when sent)."""
    services = services_of(request)
    access = Access(user, _level(request, None, level), services.config.compliance)
    return ModelList(data=[ModelCard(id=m.name) for m in services.models.entries(access) if m.available])


_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "a chat.completion, or with `stream: true` chat.completion.chunk events ending "
        "with `data: [DONE]`",
        "content": {"text/event-stream": {}},
    },
    400: {"model": ErrorBody},
    401: {"model": ErrorBody},
    404: {"model": ErrorBody},
}


@router.post("/chat/completions", response_model=ChatCompletion, responses=_DOC)
async def chat_completions(request: Request, user: UserDep, body: CompletionRequest, level: LevelHeader = None) -> Any:
    """Answer with the host's tool loop and the caller's MCP tools (OpenAI's API shape)."""
    try:
        subscription = await _start(request, user, body, _level(request, body.compliance_level, level))
    except SwitchboardError as exc:
        return render(exc, "openai").response()
    completion_id, created = f"chatcmpl-{new_id()}", int(time.time())

    def finished() -> None:
        subscription.turn.leave(subscription)  # a turn nobody reads is stopped after the grace period

    if body.stream:
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        chunks = completion_chunks(_events(subscription), completion_id, created, body.model, include_usage)
        return EventStreamResponse(
            chunks, on_close=finished, shutdown_grace_s=services_of(request).turns.stream_grace_s
        )
    content: list[str] = []
    try:
        async for event in _events(subscription):
            match event:
                case TokenEvent():
                    content.append(event.text)
                case ErrorEvent():
                    return render(event, "openai").response()
                case MessageDone():
                    message = OutputMessage(content="".join(content))
                    choice = Choice(message=message, finish_reason=FINISH.get(event.finish_reason, "stop"))
                    return ChatCompletion(
                        id=completion_id, created=created, model=body.model, choices=[choice], usage=usage_of(event)
                    )
                case _:
                    assert_never(event)
    finally:
        finished()
    return render(SwitchboardError("the answer ended without finishing"), "openai").response()
