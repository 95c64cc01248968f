"""The websocket endpoint (`/ws`, ARCHITECTURE §3).

A reader loop handles client messages while the running turn (one task)
streams its events; cancel, approvals and elicitation answers therefore
arrive while a turn waits.  A malformed message gets an `error` event and
the connection stays open."""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress

from fastapi import APIRouter, WebSocket, WebSocketDisconnect, status
from pydantic import BaseModel

from ..chat import ApprovalAnswer, ChatSession, TurnState
from ..chat.events import (
    ApprovalResponse,
    CancelMessage,
    ChatMessage,
    ElicitationResponse,
    ErrorEvent,
    MessageDone,
    SessionEvent,
    parse_client_message,
)
from ..errors import SwitchboardError
from ..services import Services

__all__ = ["router"]

log = logging.getLogger("switchboard.web")
router = APIRouter()

MAX_MESSAGE_BYTES = 1_000_000


class _Connection:
    def __init__(self, websocket: WebSocket, services: Services, session: ChatSession) -> None:
        self.websocket = websocket
        self.services = services
        self.session = session
        self.turn: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()

    async def send(self, event: BaseModel) -> None:
        text: str = event.to_json()  # type: ignore[attr-defined]
        async with self._send_lock:
            await self.websocket.send_text(text)

    async def error(self, exc: SwitchboardError) -> None:
        await self.send(ErrorEvent(code=exc.code, message=exc.message, action=exc.action))

    async def handle(self, raw: str) -> None:
        if len(raw) > MAX_MESSAGE_BYTES:
            await self.send(ErrorEvent(code="bad_request", message="message too large",
                                       action=f"Keep messages under {MAX_MESSAGE_BYTES:,} bytes."))  # fmt: skip
            return
        try:
            message = parse_client_message(raw)
        except SwitchboardError as exc:
            await self.error(exc)
            return
        if isinstance(message, ChatMessage):
            await self.start_turn(message)
        elif isinstance(message, CancelMessage):
            await self.cancel_turn()
        elif isinstance(message, ApprovalResponse):
            answer = ApprovalAnswer(approved=message.approved, arguments=message.arguments, remember=message.remember)
            if not self.session.answer_approval(message.call_id, answer):
                await self.send(ErrorEvent(code="not_found", message=f"no approval is waiting for call '{message.call_id}'"))
        elif isinstance(message, ElicitationResponse):
            if not self.session.answer_elicitation(message.request_id, message.action, message.content):
                await self.send(ErrorEvent(code="not_found", message=f"no question is waiting with id '{message.request_id}'"))

    async def start_turn(self, message: ChatMessage) -> None:
        if self.turn is not None and not self.turn.done():
            await self.send(ErrorEvent(code="bad_request", message="an answer is still being written",
                                       action="Wait for it to finish, or press Stop."))  # fmt: skip
            return
        if message.conversation_id and message.conversation_id != self.session.conversation_id:
            # A new conversation id starts a fresh conversation on this connection.
            self.session.conversation_id = message.conversation_id
            self.session.history.clear()
            self.session.allowed_tools.clear()
        self.turn = asyncio.create_task(self._run_turn(message), name=f"turn:{self.session.user.email}")

    async def _run_turn(self, message: ChatMessage) -> None:
        state = TurnState()
        engine = self.services.engine
        try:
            async for event in engine.run_turn(self.session, message, state):
                await self.send(event)
        except asyncio.CancelledError:
            with suppress(Exception):
                await self.send(engine.close_cancelled(self.session, state))
            raise
        except Exception:
            log.exception("turn failed", extra={"event": "turn_failed", "user": self.session.user.email})
            with suppress(Exception):
                await self.send(ErrorEvent(code="internal", message="something went wrong while answering",
                                           action="Try again; if it keeps happening, tell your administrator."))  # fmt: skip
                await self.send(MessageDone(message_id=state.message_id, finish_reason="error", html=""))

    async def cancel_turn(self) -> None:
        turn = self.turn
        if turn is None or turn.done():
            return
        turn.cancel()
        with suppress(asyncio.CancelledError):
            await turn


@router.websocket("/ws")
async def websocket_endpoint(websocket: WebSocket) -> None:
    services: Services = websocket.app.state.services
    # Host and Origin were checked by RequestGuardMiddleware (web/security.py).
    try:
        user = await services.auth.identify(websocket.headers)
    except SwitchboardError:
        await websocket.accept()  # closing before accepting would reach the browser as HTTP 403, not 1008
        await websocket.close(code=status.WS_1008_POLICY_VIOLATION)
        return
    await websocket.accept()
    session = ChatSession(user=user)
    connection = _Connection(websocket, services, session)
    await connection.send(SessionEvent(user=user.email, groups=sorted(user.groups), conversation_id=session.conversation_id))
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            raw = message.get("text")
            if raw is None:
                raw_bytes = message.get("bytes") or b""
                try:
                    raw = raw_bytes.decode("utf-8")
                except UnicodeDecodeError:
                    await connection.send(ErrorEvent(code="bad_request", message="messages must be UTF-8 JSON text"))
                    continue
            await connection.handle(raw)
    except WebSocketDisconnect:
        pass
    finally:
        # Nothing keeps running for a client that has gone.
        await connection.cancel_turn()
