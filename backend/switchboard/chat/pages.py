"""The pages that have a conversation open, so that events made outside a turn (an MCP App's
own tool calls and their approvals) reach every one of them, on this process and, through `share`
(the relay, which carries the event's JSON text), on the others. A door watches the conversation
its page shows (after checking that the page's user owns it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .events import ServerEvent

__all__ = ["ConversationPages"]

MAX_QUEUED = 1000  # events waiting for one slow page; more are dropped (the page reloads from the store)


class ConversationPages:
    def __init__(self, share: Callable[[str, str], None] | None = None) -> None:
        self._queues: dict[str, set[asyncio.Queue[ServerEvent]]] = {}
        self._share = share  # (conversation id, event as JSON) to the pages on the other processes

    @contextmanager
    def watch(self, conversation_id: str) -> Iterator[asyncio.Queue[ServerEvent]]:
        queue: asyncio.Queue[ServerEvent] = asyncio.Queue(MAX_QUEUED)
        self._queues.setdefault(conversation_id, set()).add(queue)
        try:
            yield queue
        finally:
            watching = self._queues.get(conversation_id)
            if watching is not None:
                watching.discard(queue)
                if not watching:
                    del self._queues[conversation_id]

    def publish(self, conversation_id: str, event: ServerEvent) -> int:
        """Send to every page of the conversation, here and on the other processes; how many
        here got it."""
        if self._share is not None:
            self._share(conversation_id, event.to_json())
        return self.deliver(conversation_id, event)

    def deliver(self, conversation_id: str, event: ServerEvent) -> int:
        """Send to the pages of the conversation on this process."""
        sent = 0
        for queue in self._queues.get(conversation_id, ()):
            if not queue.full():
                queue.put_nowait(event)
                sent += 1
        return sent

    def watching(self, conversation_id: str) -> int:
        return len(self._queues.get(conversation_id, ()))
