"""Both ends of a turn followed across processes, and how texts fit in messages.

The owner (`Shared`) numbers the events of a turn that other processes follow and sends each batch
inside the message itself when it fits (`ev`), else through `turn_events` (`events`): one
statement inserts the rows and sends the messages. A follower (`RemoteTurn`) takes a batch at once
when it continues the last one it has; after a gap (it joined late, or a batch went through the
table) it reads `turn_events` from where it is, once, keeping the batches that come meanwhile to
take after the read, so its listeners get every event once, in order."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from pydantic import ValidationError

from ...store.live import MAX_PAYLOAD, EventRow, Note
from ..events import ServerEvent, event_from_json
from ..listeners import END, Subscription
from .messages import EventBatch, EventsInTable, PageEvent, UserEvent, encode

__all__ = ["Pieces", "RemoteTurn", "Shared", "channel", "event_messages", "pieces", "read_event"]

log = logging.getLogger("switchboard.chat")

_ROOM = MAX_PAYLOAD - 200  # what the bodies of one message may take, besides its other fields
_PIECE_FIELDS = 64  # `,"t":` and, in pieces, `,"id":"<12 hex>","i":<n>,"n":<n>`
TextMessage = TypeVar("TextMessage", PageEvent, UserEvent)


def channel(process_id: str) -> str:
    return f"sb_{process_id}"


def read_event(body: str) -> ServerEvent | None:
    """An event from another process, from its JSON text; None (and a warning) for one this
    process cannot read (a newer version's kind during a rolling update)."""
    try:
        return event_from_json(body)
    except ValidationError:
        log.warning("an event from another process could not be read", extra={"event": "relay_event_unreadable"})
        return None


def _size(text: str) -> int:
    return len(json.dumps(text))  # as it is inside a payload (ASCII: characters are bytes)


def event_messages(conversation_id: str, first: int, bodies: list[str]) -> list[EventBatch | EventsInTable]:
    """Messages carrying events `first`, `first + 1`, ... inline while they fit; from the first
    body too large for a message on, one `events` message (the follower reads the table)."""
    messages: list[EventBatch | EventsInTable] = []
    group: list[str] = []
    used = 0
    start = first
    for n, body in enumerate(bodies, first):
        size = _size(body) + 1
        if size > _ROOM:
            if group:
                messages.append(EventBatch(conversation_id=conversation_id, first=start, bodies=group))
            messages.append(EventsInTable(conversation_id=conversation_id))
            return messages
        if used + size > _ROOM:
            messages.append(EventBatch(conversation_id=conversation_id, first=start, bodies=group))
            group, used, start = [], 0, n
        group.append(body)
        used += size
    if group:
        messages.append(EventBatch(conversation_id=conversation_id, first=start, bodies=group))
    return messages


def pieces(message: TextMessage, text: str) -> Iterator[TextMessage]:
    """`message` carrying `text`, split over several messages (`piece_of`, `index`, `count`) when
    it is too large for one (`Pieces` puts it together again). The room left for the text is
    what the message's other fields leave (an address may take 320 bytes)."""
    room = MAX_PAYLOAD - len(encode(message)) - _PIECE_FIELDS
    if _size(text) <= room:
        yield message.model_copy(update={"text": text})
        return
    parts: list[str] = []
    rest = text
    while rest:
        step = min(len(rest), room // 2)
        while _size(rest[:step]) > room:
            step //= 2
        parts.append(rest[:step])
        rest = rest[step:]
    token = secrets.token_hex(6)
    for i, part in enumerate(parts):
        yield message.model_copy(update={"piece_of": token, "index": i, "count": len(parts), "text": part})


class Pieces:
    """Texts sent in pieces, put together as their pieces come (in order, one statement)."""

    def __init__(self) -> None:
        self._parts: dict[str, list[str]] = {}

    def text(self, message: PageEvent | UserEvent) -> str | None:
        """The whole text once its last piece came; None before."""
        token = message.piece_of
        if token is None:
            return message.text
        parts = self._parts.setdefault(token, [])
        if message.index != len(parts):  # a piece missing: drop the text rather than show half of it
            self._parts.pop(token, None)
            return None
        parts.append(message.text)
        if len(parts) < message.count:
            return None
        del self._parts[token]
        return "".join(parts)


class Shared:
    """A turn of this process that listeners on other processes follow: its events are numbered
    from 1 (the first follower's replay) and gathered until the outbox builds its next statement."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self.followers: set[str] = set()
        self.next_seq = 1
        self.pending: list[str] = []
        self.queued = False  # a batch of this turn is in the outbox

    @property
    def upto(self) -> int:
        """The number of the last event published so far."""
        return self.next_seq - 1 + len(self.pending)

    def batch(self) -> tuple[list[EventRow], list[Note]]:
        self.queued = False
        bodies, self.pending = self.pending, []
        if not bodies:
            return [], []
        first, self.next_seq = self.next_seq, self.next_seq + len(bodies)
        rows = [(self.conversation_id, first + n, body) for n, body in enumerate(bodies)]
        texts = [encode(m) for m in event_messages(self.conversation_id, first, bodies)]
        return rows, [(channel(f), t) for f in sorted(self.followers) for t in texts]


class RemoteTurn:
    """A turn running in another process, followed here: what its listeners here see."""

    def __init__(
        self,
        conversation_id: str,
        owner: str,
        read: Callable[[str, int], Awaitable[list[tuple[int, str]]]],
        on_empty: Callable[[RemoteTurn], None],
    ) -> None:
        self.conversation_id, self.owner = conversation_id, owner
        self._read, self._on_empty = read, on_empty
        self.listeners: set[Subscription] = set()
        self.log: list[ServerEvent] = []  # every event so far, for listeners here that join later
        self.read_upto = 0
        self.ended = False
        self._reading = asyncio.Lock()
        self._held: list[tuple[int, list[str]]] = []  # batches that came during a read, or after a gap
        self.answered = asyncio.Event()  # the owner has answered the follow (events, or the end)

    @property
    def running(self) -> bool:
        return not self.ended

    def join(self) -> Subscription:
        subscription = Subscription(self)
        for event in self.log:
            subscription.queue.put_nowait(event)
        self.listeners.add(subscription)
        return subscription

    def leave(self, subscription: Subscription) -> None:
        self.listeners.discard(subscription)
        if not self.listeners:
            self._on_empty(self)

    def take(self, first: int, bodies: list[str]) -> bool:
        """Deliver events carried in a message, or keep them for the read under way; False when
        they do not continue what was delivered: then `catch_up` must read what came between."""
        if self._reading.locked() or first > self.read_upto + 1:
            self._held.append((first, bodies))
            return self._reading.locked()
        self._continue(first, bodies)
        return True

    def _continue(self, first: int, bodies: list[str]) -> bool:
        """Deliver the events of a batch that are new; False when it starts past a gap."""
        if first > self.read_upto + 1:
            return False
        for seq, body in enumerate(bodies, first):
            if seq == self.read_upto + 1:
                self._deliver(seq, body)
        return True

    async def catch_up(self) -> None:
        """Read from the table what came after the last event delivered, then take the batches
        kept meanwhile; again while one of them still starts past a gap."""
        async with self._reading:
            while True:
                before = self.read_upto
                for seq, body in await self._read(self.conversation_id, self.read_upto):
                    if seq != self.read_upto + 1:
                        break
                    self._deliver(seq, body)
                held, self._held = sorted(self._held, key=lambda batch: batch[0]), []
                for n, (first, bodies) in enumerate(held):
                    if not self._continue(first, bodies):
                        self._held = held[n:]
                        break
                if not self._held or self.read_upto == before:  # (no progress: the next message tries again)
                    return

    def _deliver(self, seq: int, body: str) -> None:
        self.read_upto = seq
        event = read_event(body)  # once, whatever the number of listeners
        if event is None:
            return
        self.log.append(event)
        self.answered.set()
        for listener in self.listeners:
            listener.queue.put_nowait(event)

    def end(self, *extra: ServerEvent) -> None:
        if self.ended:
            return
        self.ended = True
        self.log.extend(extra)
        self.answered.set()
        for listener in list(self.listeners):
            for event in extra:
                listener.queue.put_nowait(event)
            listener.queue.put_nowait(END)
