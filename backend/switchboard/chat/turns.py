"""Who owns a turn: the hub runs each conversation's turn as one task, keeps
its events so far, and lets any door (a websocket, an HTTP stream) start,
join (`attach`), cancel and answer it.  A door is a pump from its wire format
to the hub and back.

One turn per conversation at a time.  A turn whose every listener has gone
keeps running for `grace_s` (a reload or reconnect attaches again), then is
cancelled.  A crash inside a turn ends it with an `error` and a
`message_done`, never silently."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import suppress

from ..auth import User
from ..errors import BadRequest, NotFound, SwitchboardError
from ..telemetry import turn_finished, turn_span
from .events import (
    ChatMessage,
    ConversationEvent,
    ErrorEvent,
    MessageDone,
    ServerEvent,
    TokenEvent,
)
from .conversations import Conversations
from .loop import ChatEngine, PreparedTurn, TurnState
from .session import ApprovalAnswer, ChatSession
from .task_board import TaskBoard

__all__ = ["Subscription", "Turn", "TurnHub"]

log = logging.getLogger("switchboard.chat")

_END = None


class Subscription:
    """One listener's view of a turn: the events so far, then the rest live (JSON text)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._events()

    async def _events(self) -> AsyncIterator[str]:
        try:
            while (text := await self.queue.get()) is not _END:
                yield text
        finally:
            self.turn.leave(self)


class Turn:
    def __init__(self, hub: TurnHub, session: ChatSession) -> None:
        self.hub = hub
        self.session = session
        self.state = TurnState()
        self.log: list[str] = []  # every event sent so far, for listeners that join late
        self._tokens: list[str] = []  # consecutive token texts not yet in the log
        self.listeners: set[Subscription] = set()
        self.task: asyncio.Task[None] | None = None
        self._grace: asyncio.TimerHandle | None = None

    @property
    def conversation_id(self) -> str:
        return self.session.conversation_id

    @property
    def owner(self) -> str:
        return self.session.user.email

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def join(self) -> Subscription:
        subscription = Subscription(self)
        for text in self._replay():
            subscription.queue.put_nowait(text)
        if not self.running:
            subscription.queue.put_nowait(_END)
        self.listeners.add(subscription)
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        return subscription

    def leave(self, subscription: Subscription) -> None:
        self.listeners.discard(subscription)
        if not self.listeners and self.running and self._grace is None:
            self._grace = asyncio.get_running_loop().call_later(self.hub.grace_s, self._abandoned)

    def _abandoned(self) -> None:
        self._grace = None
        if not self.listeners and self.task is not None:
            log.info("turn abandoned by every client", extra={"event": "turn_abandoned", "user": self.owner})
            self.task.cancel()

    def _replay(self) -> list[str]:
        # Tokens are sent one by one live; a late listener gets them as one event.
        tokens = "".join(self._tokens)
        return self.log + ([TokenEvent(text=tokens).to_json()] if tokens else [])

    def publish(self, event: ServerEvent) -> None:
        text = event.to_json()
        if isinstance(event, TokenEvent):
            self._tokens.append(event.text)
        else:
            if self._tokens:
                self.log.append(TokenEvent(text="".join(self._tokens)).to_json())
                self._tokens = []
            self.log.append(text)
        for listener in self.listeners:
            listener.queue.put_nowait(text)

    def close(self) -> None:
        for listener in self.listeners:
            listener.queue.put_nowait(_END)


class TurnHub:
    def __init__(self, engine: ChatEngine, conversations: Conversations, *, grace_s: float = 30.0) -> None:
        self.engine = engine
        self.conversations = conversations
        self.grace_s = grace_s
        self._turns: dict[str, Turn] = {}  # running (or just finished) turns by conversation id
        self.task_questions: TaskBoard | None = None  # questions of background tasks, answered through the same doors

    def running(self, conversation_id: str) -> Turn | None:
        turn = self._turns.get(conversation_id)
        return turn if turn is not None and turn.running else None

    def tasks(self) -> list[asyncio.Task[None]]:
        return [t.task for t in self._turns.values() if t.task is not None and not t.task.done()]

    async def start(self, user: User, admin: bool, request: ChatMessage, current_id: str) -> Subscription:
        """Start a turn for this `chat`; raises SwitchboardError when it cannot start."""
        wanted = request.conversation_id or current_id
        if self.running(wanted) is not None:
            raise BadRequest("an answer is still being written in this conversation",
                             action="Wait for it to finish, or press Stop.")  # fmt: skip
        session, reason = await self.conversations.session_for(user, admin, request, current_id,
                                                               self.engine.config.compliance)  # fmt: skip
        if self.running(session.conversation_id) is not None:
            raise BadRequest("an answer is still being written in this conversation",
                             action="Wait for it to finish, or press Stop.")  # fmt: skip
        prepared = await self.engine.prepare(session, request)
        session.model = prepared.model.name
        turn = Turn(self, session)
        self._turns[session.conversation_id] = turn
        turn.task = asyncio.create_task(self._run(turn, request, prepared, reason), name=f"turn:{user.email}")
        return turn.join()  # before the task first runs: nothing is missed

    async def _run(self, turn: Turn, request: ChatMessage, prepared: PreparedTurn, reason: str | None) -> None:
        session, state = turn.session, turn.state
        try:
            try:
                created = await self.conversations.begin(session, request.content)
            except SwitchboardError as exc:
                turn.publish(ErrorEvent(code=exc.code, message=exc.message, action=exc.action))
                return
            if created or reason:
                turn.publish(ConversationEvent(conversation_id=session.conversation_id, title=session.title or "New conversation",
                                               reason=reason))  # fmt: skip
            with turn_span(session.conversation_id, prepared.model.name) as span:
                async for event in self.engine.run_turn(session, request, state, self.conversations, prepared):
                    turn.publish(event)
                    if isinstance(event, MessageDone):
                        turn_finished(span, event.finish_reason)
        except asyncio.CancelledError:
            with suppress(Exception):
                async for event in self.engine.finish(session, state, "cancelled", self.conversations):
                    turn.publish(event)
            raise
        except Exception:
            log.exception("turn failed", extra={"event": "turn_failed", "user": session.user.email})
            turn.publish(ErrorEvent(code="internal", message="something went wrong while answering",
                                    action="Try again; if it keeps happening, tell your administrator."))  # fmt: skip
            turn.publish(MessageDone(message_id=state.message_id, finish_reason="error", html="",
                                     conversation_id=session.conversation_id, user_message_id=state.user_message_id))  # fmt: skip
        finally:
            turn.close()
            if self._turns.get(session.conversation_id) is turn:
                del self._turns[session.conversation_id]

    def attach(self, user: User, conversation_id: str) -> Subscription | None:
        """Join the turn running in this conversation of the user's, if any."""
        turn = self.running(conversation_id)
        if turn is None or turn.owner != user.email:
            return None
        return turn.join()

    async def cancel(self, user: User, conversation_id: str) -> bool:
        turn = self.running(conversation_id)
        if turn is None or turn.owner != user.email or turn.task is None:
            return False
        turn.task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.shield(turn.task)
        return True

    def _turn_asking(self, user: User, ask_id: str, approvals: bool) -> Turn:
        for turn in self._turns.values():
            if turn.owner != user.email:
                continue
            pending_approvals, pending_questions = turn.session.pending()
            if ask_id in (pending_approvals if approvals else pending_questions):
                return turn
        what = "approval is waiting for call" if approvals else "question is waiting with id"
        raise NotFound(f"no {what} '{ask_id}'")

    def answer_approval(self, user: User, call_id: str, answer: ApprovalAnswer) -> None:
        """Answer an approval (any door, any connection of the user's); raises NotFound."""
        turn = self._turn_asking(user, call_id, approvals=True)
        if not turn.session.answer_approval(call_id, answer):
            raise NotFound(f"no approval is waiting for call '{call_id}'")

    def answer_elicitation(self, user: User, request_id: str, action: str, content: dict | None) -> None:
        if self.task_questions is not None and self.task_questions.answer(user.email, request_id, action, content):
            return  # a background task's question (chat/tasks.py)
        turn = self._turn_asking(user, request_id, approvals=False)
        if not turn.session.answer_elicitation(request_id, action, content):
            raise NotFound(f"no question is waiting with id '{request_id}'")

    async def stop(self) -> None:
        """Cancel every running turn (app shutdown)."""
        tasks = self.tasks()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
