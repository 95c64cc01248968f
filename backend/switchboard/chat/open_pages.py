"""The pages that have a conversation open, so that events made outside a turn (an MCP App's
own tool calls and their approvals) reach every one of them, on this process and, through `share`
(the relay, which carries the event's JSON text), on the others. A door watches the conversation
its page shows (after checking that the page's user owns it). Pages are found by the
conversation's owner and id together: an event of one user's conversation never reaches a page
of another user's, whatever id that page names."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .events import ServerEvent

__all__ = ["ConversationPages"]

MAX_QUEUED = 1000  # events waiting for one slow page; more are dropped (the page reloads from the store)


class ConversationPages:
    def __init__(self, share: Callable[[str, str, str], None] | None = None) -> None:
        self._queues: dict[tuple[str, str], set[asyncio.Queue[ServerEvent]]] = {}
        self._share = share  # (owner, conversation id, event as JSON) to the pages on the other processes

    @contextmanager
    def watch(self, owner: str, conversation_id: str) -> Iterator[asyncio.Queue[ServerEvent]]:
        key = (owner, conversation_id)
        queue: asyncio.Queue[ServerEvent] = asyncio.Queue(MAX_QUEUED)
        self._queues.setdefault(key, set()).add(queue)
        try:
            yield queue
        finally:
            watching = self._queues.get(key)
            if watching is not None:
                watching.discard(queue)
                if not watching:
                    del self._queues[key]

    def publish(self, owner: str, conversation_id: str, event: ServerEvent) -> int:
        """Send to every page of the owner's conversation, here and on the other processes; how
        many here got it."""
        if self._share is not None:
            self._share(owner, conversation_id, event.to_json())
        return self.deliver(owner, conversation_id, event)

    def deliver(self, owner: str, conversation_id: str, event: ServerEvent) -> int:
        """Send to the pages of the owner's conversation on this process."""
        sent = 0
        for queue in self._queues.get((owner, conversation_id), ()):
            if not queue.full():
                queue.put_nowait(event)
                sent += 1
        return sent

    def watching(self, owner: str, conversation_id: str) -> int:
        return len(self._queues.get((owner, conversation_id), ()))
