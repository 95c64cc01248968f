"""A listener of a turn (a websocket, an HTTP stream), wherever the turn runs: its events so far,
then the rest live, as typed events (each door makes its own wire form)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Protocol

from .events import ServerEvent

__all__ = ["END", "Subscription"]

END = None  # queued after a turn's last event


class _Followed(Protocol):
    @property
    def conversation_id(self) -> str: ...

    def leave(self, subscription: Subscription) -> None: ...


class Subscription:
    """One listener's view of a turn: the events so far, then the rest live."""

    def __init__(self, turn: _Followed) -> None:
        self.turn = turn
        self.queue: asyncio.Queue[ServerEvent | None] = asyncio.Queue()

    def __aiter__(self) -> AsyncGenerator[ServerEvent, None]:
        return self._events()

    async def _events(self) -> AsyncGenerator[ServerEvent, None]:
        try:
            while (event := await self.queue.get()) is not END:
                yield event
        finally:
            self.turn.leave(self)
