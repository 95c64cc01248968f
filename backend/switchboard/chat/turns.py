"""Who owns a turn: the hub runs each conversation's turn as one task, keeps
its events so far, and lets any door (a websocket, an HTTP stream) start,
join (`attach`), cancel and answer it.  A door is a pump from its wire format
to the hub and back.

One turn per conversation at a time, and per user at most `limits.turns` turns
and `limits.streams` listeners at once.  A turn whose every listener has gone
keeps running for `grace_s` (a reload or reconnect attaches again), then is
cancelled.  A crash inside a turn ends it with an `error` and a
`message_done`, never silently."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from ..errors import Conflict, NotFound, TooMany
from ..identity.users import User
from ..telemetry import turn_finished, turn_span
from .conversation_state import Seed
from .conversations import Conversations
from .events import ChatMessage, ErrorEvent, IncognitoStateEvent, MessageDone
from .listeners import Subscription
from .loop import ChatEngine
from .open_pages import ConversationPages
from .questions import ASK, ApprovalAnswer, Preferences, Questions
from .relay.messages import ApprovalAsk, CancelAsk, ElicitationAsk
from .relay.postgres import LocalRelay, Relay
from .relay.seam import Identities
from .running import RunningTurns
from .tasks.board import TaskBoard
from .turn import Turn
from .turn_state import PreparedTurn, TurnState

__all__ = ["Identities", "Subscription", "Turn", "TurnHub", "UserLimits"]

log = logging.getLogger("switchboard.chat")


@dataclass(frozen=True, slots=True)
class UserLimits:
    turns: int = 8  # answers being written at once, per user
    streams: int = 32  # listeners (streams, followed turns) at once, per user


BUSY = "an answer is still being written in this conversation"
STOPPED_TELL_S = 5.0  # after the drain's grace: a stopped turn's last events reach its open streams


class TurnHub:
    def __init__(
        self,
        engine: ChatEngine,
        conversations: Conversations,
        identities: Identities,
        *,
        grace_s: float = 30.0,
        limits: UserLimits | None = None,
        relay: Relay | None = None,
        shutdown_grace_s: float = 10.0,
        task_questions: TaskBoard | None = None,
        running: RunningTurns | None = None,
    ) -> None:
        self.engine = engine
        self.identities = identities
        self.conversations = conversations
        self.grace_s = grace_s
        self.shutdown_grace_s = shutdown_grace_s  # how long a stopping process lets running turns finish
        self.relay: Relay = relay or LocalRelay()  # other processes (several on one Postgres)
        self.limits = limits or UserLimits()
        # Turns by (owner, conversation id): one user's ids never meet another's (the task poller reads them too).
        self.running_turns = running or RunningTurns(conversations.ids)
        self._turns = self.running_turns.by_key
        # Conversations whose turn is starting or running. A key is taken before the first await
        # of `start`, so two chats on one conversation cannot both pass the check.
        self._busy: set[tuple[str, str]] = set()
        self._starts: dict[str, int] = {}  # per user: turns starting or running
        # The pages showing each conversation (events made outside turns), here and on other processes.
        self.pages = ConversationPages(
            share=lambda owner, conversation_id, text: self.relay.to_pages(owner, conversation_id, text)
        )
        self._app_calls: dict[int, TurnState] = {}  # MCP Apps' calls now running (each a small turn), by id()
        self.task_questions = task_questions  # questions of background tasks, answered through the same doors
        self.draining = asyncio.Event()  # set at SIGTERM: connections without a running turn close (`drain`)

    @contextmanager
    def app_call(self, turn: TurnState) -> Iterator[None]:
        """While an app's call runs, its approval can be answered like a turn's (any door)."""
        self._app_calls[id(turn)] = turn
        try:
            yield
        finally:
            self._app_calls.pop(id(turn), None)

    def running(self, owner: str, conversation_id: str) -> Turn | None:
        """The turn running in this conversation of `owner`'s, by the id a client knows it by."""
        return self.running_turns.running(owner, conversation_id)

    def tasks(self) -> list[asyncio.Task[None]]:
        return [t.task for t in self._turns.values() if t.task is not None and not t.task.done()]

    async def start(
        self,
        user: User,
        request: ChatMessage,
        current_id: str,
        *,
        preferences: Preferences = ASK,
        seed: Seed | None = None,
    ) -> Subscription:
        """Start a turn for this `chat`; raises SwitchboardError when it cannot start. `preferences`:
        what the door wants done with approvals and questions. `seed`: the turn runs in a
        conversation of its own made from it, kept for this turn only (/v1's requests). The user's
        groups and admin are worked out again for the turn, from the configuration of now (a
        socket may have been open across a reload)."""
        email = user.email
        door_made = seed is not None  # /v1's: the client holds the history itself
        self._check_streams(email)
        if self._starts.get(email, 0) >= self.limits.turns:
            raise TooMany(
                f"you have {self.limits.turns} answers being written already",
                action="Wait for one to finish, or stop one, and try again.",
            )
        one_turn = seed.start(email) if seed is not None else None
        wanted = (email, one_turn.id if one_turn is not None else request.conversation_id or current_id)
        self._claim(wanted)  # before any await
        self._starts[email] = self._starts.get(email, 0) + 1
        held = [wanted]
        try:
            user = await self.identities.refresh(user)
            if one_turn is not None:
                state = TurnState(user=user, conversation=one_turn, preferences=preferences)
            else:
                state = await self.conversations.turn_for(
                    user, request, current_id, self.engine.config.compliance, preferences
                )
            key = (email, state.conversation.id)
            if key != wanted:
                self._claim(key)
                held.append(key)
            prepared = await self.engine.prepare(state, request)
            if not state.conversation.incognito:
                state.writes.claim = await self.relay.claim(
                    state.conversation.id, email
                )  # one turn per conversation, across processes
        except BaseException:
            self._release(email, held)
            raise
        if key != wanted:
            self._busy.discard(wanted)  # the turn holds the conversation's own key from here on
        turn = Turn(self, state)
        turn.sealed = state.conversation.incognito and not door_made
        self._turns[key] = turn
        turn.task = asyncio.create_task(self._run(turn, request, prepared), name=f"turn:{email}")
        return turn.join()  # before the task first runs: nothing is missed

    def _claim(self, key: tuple[str, str]) -> None:
        if key in self._busy or self.running(*key) is not None:
            raise Conflict(BUSY, action="Wait for it to finish, or press Stop.")
        self._busy.add(key)

    def _release(self, email: str, keys: list[tuple[str, str]]) -> None:
        for key in keys:
            self._busy.discard(key)
        left = self._starts.get(email, 1) - 1
        if left > 0:
            self._starts[email] = left
        else:
            self._starts.pop(email, None)

    def _check_streams(self, email: str) -> None:
        open_streams = sum(len(t.listeners) for t in self._turns.values() if t.owner == email)
        if open_streams >= self.limits.streams:
            raise TooMany(
                f"you have {open_streams} answer streams open already",
                action="Close other tabs, scripts or streams you no longer read, and try again.",
            )

    async def _run(self, turn: Turn, request: ChatMessage, prepared: PreparedTurn) -> None:
        state = turn.state
        recorder = self.conversations.recorder
        try:
            with turn_span(state.conversation.id, prepared.model.name) as span:
                async for event in self.engine.run_turn(state, request, recorder, prepared):
                    if isinstance(event, MessageDone):
                        self._publish_state(turn)
                    turn.publish(event)
                    if isinstance(event, MessageDone):
                        turn_finished(span, event.finish_reason)
        except asyncio.CancelledError:
            with suppress(Exception):
                async for event in self.engine.finish(state, "cancelled", recorder):
                    if isinstance(event, MessageDone):
                        self._publish_state(turn)
                    turn.publish(event)
            raise
        except Exception:
            log.exception("turn failed", extra={"event": "turn_failed", "user": state.user.email})
            turn.publish(
                ErrorEvent(
                    code="internal",
                    message="something went wrong while answering",
                    action="Try again; if it keeps happening, tell your administrator.",
                )
            )
            turn.publish(
                MessageDone(
                    message_id=state.message_id,
                    finish_reason="error",
                    html="",
                    conversation_id=state.conversation.id,
                    user_message_id=state.progress.user_message_id,
                )
            )
        finally:
            turn.close()
            key = (turn.owner, state.conversation.id)
            if self._turns.get(key) is turn:
                del self._turns[key]
            self._release(turn.owner, [key])
            self.conversations.turn_ended(state.conversation)
            if not state.conversation.incognito:
                with suppress(Exception):
                    await asyncio.shield(self.relay.released(turn))

    def _publish_state(self, turn: Turn) -> None:
        """An incognito chat's history, sealed for the page to send back (any process opens it)."""
        if turn.sealed:
            sealed = self.conversations.sealed_state(turn.state.conversation)
            if sealed is not None:
                turn.publish(IncognitoStateEvent(conversation_id=turn.conversation_id, state=sealed))

    def attach(self, user: User, conversation_id: str) -> Subscription | None:
        """Join the turn running in this conversation of the user's, if any."""
        turn = self.running(user.email, conversation_id)
        if turn is None:
            return None
        self._check_streams(user.email)
        return turn.join()

    async def attach_anywhere(self, user: User, conversation_id: str) -> Subscription | None:
        """Join the turn running in this conversation of the user's, in this process or another."""
        local = self.attach(user, conversation_id)
        if local is not None:
            return local
        for stored_id in self.conversations.ids.candidates(user.email, conversation_id):
            remote = await self.relay.attach(user, stored_id)
            if remote is not None:
                return remote
        return None

    async def cancel(self, user: User, conversation_id: str, *, local_only: bool = False) -> bool:
        turn = self.running(user.email, conversation_id)
        if turn is None or turn.task is None:
            return False if local_only else await self.relay.ask(user, CancelAsk(conversation_id=conversation_id))
        turn.stop("user")
        with suppress(asyncio.CancelledError):
            await asyncio.shield(turn.task)
        return True

    def _asking(self, user: User, ask_id: str, approvals: bool) -> Questions:
        asking = [turn.state for turn in self._turns.values()] + list(self._app_calls.values())
        for state in asking:
            if state.user.email != user.email:
                continue
            pending_approvals, pending_questions = state.questions.pending()
            if ask_id in (pending_approvals if approvals else pending_questions):
                return state.questions
        what = "approval is waiting for call" if approvals else "question is waiting with id"
        raise NotFound(f"no {what} '{ask_id}'")

    async def answer_approval(
        self, user: User, call_id: str, answer: ApprovalAnswer, *, local_only: bool = False
    ) -> None:
        """Answer an approval (any door, any connection of the user's, any process); raises NotFound."""
        try:
            questions = self._asking(user, call_id, approvals=True)
        except NotFound:
            asked = ApprovalAsk(
                call_id=call_id,
                approved=answer.approved,
                arguments=answer.arguments,
                remember=answer.remember,
                reason=answer.reason,
            )
            if local_only or not await self.relay.ask(user, asked):
                raise
            return
        if not questions.answer_approval(call_id, answer):
            raise NotFound(f"no approval is waiting for call '{call_id}'")

    async def answer_elicitation(
        self, user: User, request_id: str, action: str, content: dict | None, *, local_only: bool = False
    ) -> None:
        if self.task_questions is not None and self.task_questions.answer(user.email, request_id, action, content):
            return  # a background task's question (chat/tasks/poller.py)
        try:
            questions = self._asking(user, request_id, approvals=False)
        except NotFound:
            asked = ElicitationAsk(request_id=request_id, action=action, content=content)
            if local_only or not await self.relay.ask(user, asked):
                raise
            return
        if not questions.answer_elicitation(request_id, action, content):
            raise NotFound(f"no question is waiting with id '{request_id}'")

    @property
    def stream_grace_s(self) -> float:
        """How long an open `/api/chat` or `/v1` stream may run once the server is asked to stop:
        the drain's grace, and time for the turns stopped at its end to tell their streams."""
        return self.shutdown_grace_s + STOPPED_TELL_S

    async def drain(self) -> None:
        """SIGTERM (a rolling restart): this process takes no new connections (the server closed its
        socket) and `draining` is set, so pages with no turn running reconnect elsewhere. Running
        turns get `shutdown_grace_s` to finish, with their listeners still connected; the rest are
        then stopped, stored as stopped by a restart, and their listeners told."""
        self.draining.set()
        tasks = self.tasks()
        if tasks and self.shutdown_grace_s > 0:
            log.info(
                "waiting up to %g s for %d running answer%s to finish (SWITCHBOARD_SHUTDOWN_GRACE_S)",
                self.shutdown_grace_s,
                len(tasks),
                "" if len(tasks) == 1 else "s",
                extra={"event": "stop_wait"},
            )
            await asyncio.wait(tasks, timeout=self.shutdown_grace_s)
        for turn in list(self._turns.values()):
            turn.stop("restart")
        # Turns that started during the grace (a page's message sent as it was being moved) too.
        await asyncio.gather(*tasks, *self.tasks(), return_exceptions=True)

    async def stop(self) -> None:
        """App shutdown: drain (if the server did not already), then stop relaying."""
        await self.drain()
        await self.relay.stop()
