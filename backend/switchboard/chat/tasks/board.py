"""Where background tasks meet their owners: each user's open pages listen here for `task`
events and for the questions a task asks (`elicitation_request`), and an answer from any door
(the websocket, `POST /api/elicitations/{id}`) finds the question it answers. Events and questions
reach the user's pages on the other processes too, through `peers` (the relay, which carries the
event's JSON text); an answer given there comes back through the relay's `ask`."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ..events import ServerEvent

__all__ = ["Peers", "TaskBoard"]

QUEUE_LIMIT = 1000  # a page that stops reading loses its oldest task events, never the host's memory


class Peers(Protocol):
    """The other app processes (the relay, chat/relay/seam.py)."""

    def to_user(self, user: str, text: str) -> None:
        """An event (as JSON) for the user's pages on the other processes."""

    def page_opened(self, user: str, page: str) -> None:
        """A page opened here: the other processes send it their open questions for the user."""


class TaskBoard:
    def __init__(self, peers: Peers | None = None) -> None:
        self._peers = peers  # None: one process
        self._listeners: dict[str, set[asyncio.Queue[ServerEvent]]] = {}
        self._pages: dict[str, asyncio.Queue[ServerEvent]] = {}
        self._questions: dict[str, tuple[str, asyncio.Future[tuple[str, dict[str, Any] | None]], ServerEvent]] = {}

    @contextmanager
    def listen(self, user: str) -> Iterator[asyncio.Queue[ServerEvent]]:
        """The user's task events while the block runs."""
        queue: asyncio.Queue[ServerEvent] = asyncio.Queue(QUEUE_LIMIT)
        for question in self.open_questions(user):  # a page opened later is asked too
            queue.put_nowait(question)
        self._listeners.setdefault(user, set()).add(queue)
        page = secrets.token_hex(8)
        self._pages[page] = queue
        if self._peers is not None:
            self._peers.page_opened(user, page)
        try:
            yield queue
        finally:
            del self._pages[page]
            listeners = self._listeners.get(user, set())
            listeners.discard(queue)
            if not listeners:
                self._listeners.pop(user, None)

    def publish(self, user: str, event: ServerEvent) -> None:
        if self._peers is not None:
            self._peers.to_user(user, event.to_json())
        self.deliver(user, event)

    def deliver(self, user: str, event: ServerEvent) -> None:
        """To the user's pages on this process."""
        for queue in self._listeners.get(user, ()):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(event)

    def deliver_to(self, page: str, event: ServerEvent) -> None:
        """To one page on this process (a question asked elsewhere before it opened)."""
        queue = self._pages.get(page)
        if queue is not None and not queue.full():
            queue.put_nowait(event)

    def open_questions(self, user: str) -> list[ServerEvent]:
        return [
            question
            for owner, future, question in list(self._questions.values())
            if owner == user and not future.done()
        ]

    def listening(self, user: str) -> bool:
        return bool(self._listeners.get(user))

    def ask(
        self, user: str, request_id: str, question: ServerEvent
    ) -> asyncio.Future[tuple[str, dict[str, Any] | None]]:
        """Put the question to every open page of the user's (and to pages opened later)."""
        future: asyncio.Future[tuple[str, dict[str, Any] | None]] = asyncio.get_running_loop().create_future()
        self._questions[request_id] = (user, future, question)
        self.publish(user, question)
        return future

    def forget(self, request_id: str) -> None:
        self._questions.pop(request_id, None)

    def answer(self, user: str, request_id: str, action: str, content: dict[str, Any] | None) -> bool:
        """False unless `user` owns an open question with this id."""
        asked = self._questions.get(request_id)
        if asked is None or asked[0] != user or asked[1].done():  # someone else's is "not found" too
            return False
        del self._questions[request_id]
        asked[1].set_result((action, content))
        return True
