"""A turn running in this process (chat/turns.py's hub starts it): its events so far, for
listeners that join late, and the listeners it hands each new event to."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from .calls.unfinished import StoppedBy
from .events import ElicitationRequest, ServerEvent, TokenEvent
from .listeners import END as _END
from .listeners import Subscription
from .relay.seam import Relay
from .turn_state import TurnState

__all__ = ["Turn", "TurnOwner"]

log = logging.getLogger("switchboard.chat")


class TurnOwner(Protocol):
    """What a turn needs of its hub (chat/turns.py `TurnHub`)."""

    grace_s: float  # how long a turn whose every listener has gone keeps running
    relay: Relay


class Turn:
    def __init__(self, hub: TurnOwner, state: TurnState) -> None:
        self.hub = hub
        self.state = state
        self.log: list[ServerEvent] = []  # every event sent so far, for listeners that join late
        self._tokens: list[str] = []  # consecutive token texts not yet in the log
        self.listeners: set[Subscription] = set()
        self.task: asyncio.Task[None] | None = None
        self._grace: asyncio.TimerHandle | None = None
        self.sealed = False  # an incognito chat the page holds: its state goes out before message_done
        self._asked: dict[str, str] = {}  # question (request id) -> the call that asked it

    @property
    def conversation_id(self) -> str:
        return self.state.conversation.id

    @property
    def owner(self) -> str:
        return self.state.user.email

    @property
    def claimed(self) -> bool:
        return self.state.writes.claim is not None

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def join(self) -> Subscription:
        subscription = Subscription(self)
        for event in self.replay():
            subscription.queue.put_nowait(event)
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
            self.stop("abandoned")

    def stop(self, by: StoppedBy) -> None:
        """Cancel the turn, noting who stopped it and which calls were waiting for a person then."""
        if self.task is None or self.task.done():
            return
        approvals, questions = self.state.questions.pending()
        self.state.stop.stopped_by = by
        self.state.stop.awaiting_approval = approvals
        self.state.stop.awaiting_answer = {self._asked[asked] for asked in questions if asked in self._asked}
        self.task.cancel()

    def replay(self) -> list[ServerEvent]:
        # Tokens are sent one by one live; a late listener gets them as one event.
        tokens = "".join(self._tokens)
        return self.log + ([TokenEvent(text=tokens)] if tokens else [])

    def publish(self, event: ServerEvent) -> None:
        """Hand the event to every listener as a value: each door serializes it (once per event,
        `ServerEvent.to_json`), so nothing here depends on a wire format."""
        if isinstance(event, ElicitationRequest) and event.call_id:
            self._asked[event.request_id] = event.call_id
        if isinstance(event, TokenEvent):
            self._tokens.append(event.text)
        else:
            if self._tokens:
                self.log.append(TokenEvent(text="".join(self._tokens)))
                self._tokens = []
            self.log.append(event)
        for listener in self.listeners:
            listener.queue.put_nowait(event)
        self.hub.relay.published(self, event)

    def close(self) -> None:
        for listener in self.listeners:
            listener.queue.put_nowait(_END)
