"""The HTTP door: `POST /api/chat` streams a turn's events as server-sent
events, and the answer routes (approval, elicitation, cancel) reach a turn
started from any door.  Like the websocket, a pump to the turn hub and back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from ..chat import ApprovalAnswer, Subscription
from ..chat.conversation_state import new_id
from ..chat.events import ChatMessage, ServerEvent
from ..errors import BadRequest, LLMUnavailable, NotFound
from ..identity.users import User
from .deps import current_user, services_of
from .sse import EventStreamResponse, ServerSentEvent, frame

__all__ = ["ChatRequest", "router", "sse_event", "sse_events"]

router = APIRouter(prefix="/api", tags=["chat"])
UserDep = Annotated[User, Depends(current_user)]


class ChatRequest(ChatMessage):
    """The websocket's `chat` message; `type` may be left out here."""

    type: Literal["chat"] = "chat"


class ApprovalBody(BaseModel):
    approved: bool
    arguments: dict[str, Any] | None = Field(default=None, description="edited arguments to run the call with")
    remember: bool = Field(default=False, description="allow this tool unasked for the rest of the conversation")


class ElicitationBody(BaseModel):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


def sse_event(event: ServerEvent) -> ServerSentEvent:
    """This door's wire form: `event: <type>` and the event's JSON text (the same text the
    websocket sends, made once per event)."""
    return frame(event.type, event.to_json())


async def sse_events(subscription: Subscription) -> AsyncIterator[ServerSentEvent]:
    events = aiter(subscription)
    try:
        async for event in events:
            yield sse_event(event)
    finally:
        await events.aclose()  # leaves the turn: the hub's grace period starts


_STREAM_DOC = {
    200: {
        "description": "one server-sent event per turn event, the last one `message_done`",
        "content": {"text/event-stream": {"example": 'event: token\ndata: {"type":"token","text":"Hi"}\n\n'}},
    }
}


@router.post("/chat", status_code=200, response_class=EventStreamResponse, responses=_STREAM_DOC)  # type: ignore[arg-type]
async def chat(request: Request, user: UserDep, body: ChatRequest) -> EventStreamResponse:
    """Run a turn (as the websocket's `chat` message does) and stream its events.
    A chat that is refused before it starts answers a JSON error instead."""
    services = services_of(request)
    try:
        subscription = await services.turns.start(user, body, new_id())
    except LLMUnavailable as exc:  # the model asked for is not one this user can use now: the request's fault
        raise BadRequest(exc.message, action=exc.action) from None
    return EventStreamResponse(
        sse_events(subscription),
        on_close=lambda: subscription.turn.leave(subscription),
        shutdown_grace_s=services.turns.stream_grace_s,
    )


@router.post("/calls/{call_id}/approval", status_code=204)
async def answer_approval(request: Request, user: UserDep, call_id: str, body: ApprovalBody) -> Response:
    """Answer an `approval_request` of one of your turns, whichever door started it."""
    await services_of(request).turns.answer_approval(
        user, call_id, ApprovalAnswer(body.approved, body.arguments, body.remember)
    )
    return Response(status_code=204)


@router.post("/elicitations/{request_id}", status_code=204)
async def answer_elicitation(request: Request, user: UserDep, request_id: str, body: ElicitationBody) -> Response:
    """Answer an `elicitation_request` (a tool's question) of one of your turns."""
    await services_of(request).turns.answer_elicitation(user, request_id, body.action, body.content)
    return Response(status_code=204)


@router.post("/conversations/{conversation_id}/cancel", status_code=204)
async def cancel(request: Request, user: UserDep, conversation_id: str) -> Response:
    """Stop the turn running in this conversation of yours."""
    if not await services_of(request).turns.cancel(user, conversation_id):
        raise NotFound(
            "no answer of yours is being written in this conversation",
            action="It may have finished already; read the conversation to see.",
        )
    return Response(status_code=204)
