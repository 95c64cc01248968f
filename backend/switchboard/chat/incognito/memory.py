"""Incognito conversations: never stored, held in this process's memory between turns.

Each user has a shelf of their own (a `cachetools.TTLCache`): at most `per_user`
conversations, the least recently used going first, and one unused for `idle_s`
expires. One user's conversations never push out another's. Whenever a
conversation leaves memory (pushed out, expired, or forgotten), `on_drop` gets it:
the owner deletes its uploads and artifacts (docs/security.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cachetools import TTLCache

from ..conversation_state import ConversationState

__all__ = ["IncognitoMemory"]

SWEEP_EVERY_S = 60.0  # how often every user's shelf is checked for expired conversations


class _Shelf(TTLCache[str, ConversationState]):
    """One user's conversations; everything that leaves (but `pop`) goes to `on_drop`."""

    def __init__(
        self, maxsize: int, ttl: float, timer: Callable[[], float], on_drop: Callable[[ConversationState], None]
    ) -> None:
        super().__init__(maxsize, ttl, timer)
        self._on_drop = on_drop

    def popitem(self) -> tuple[str, ConversationState]:  # full: the least recently used goes
        key, conversation = super().popitem()
        self._on_drop(conversation)
        return key, conversation

    def expire(self, time: Any = None) -> list[tuple[str, ConversationState]]:
        expired = super().expire(time)
        for _, conversation in expired:
            self._on_drop(conversation)
        return expired


class IncognitoMemory:
    def __init__(
        self,
        on_drop: Callable[[ConversationState], None],
        *,
        per_user: int = 20,
        idle_s: float = 86400.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._on_drop = on_drop
        self._per_user = per_user
        self._idle_s = idle_s
        self._timer = timer
        self._shelves: dict[str, _Shelf] = {}
        self._swept = timer()

    def get(self, owner: str, conversation_id: str) -> ConversationState | None:
        """The owner's conversation, kept for another `idle_s`; None for anyone else's."""
        self._sweep()
        shelf = self._shelves.get(owner)
        conversation = shelf.get(conversation_id) if shelf is not None else None
        if conversation is not None:
            shelf[conversation_id] = conversation  # type: ignore[index]  # used now: its idle time starts again
        return conversation

    def keep(self, conversation: ConversationState) -> None:
        self._sweep()
        owner = conversation.owner
        shelf = self._shelves.get(owner)
        if shelf is None:
            shelf = self._shelves[owner] = _Shelf(self._per_user, self._idle_s, self._timer, self._on_drop)
        shelf[conversation.id] = conversation

    def holds(self, conversation: ConversationState) -> bool:
        shelf = self._shelves.get(conversation.owner)
        return shelf is not None and shelf.get(conversation.id) is conversation

    def count(self, owner: str) -> int:
        shelf = self._shelves.get(owner)
        return len(shelf) if shelf is not None else 0

    def _sweep(self) -> None:
        """Expire idle conversations of every user now and then (a shelf expires its own only
        when it is used), and forget users with none left."""
        now = self._timer()
        if now - self._swept < SWEEP_EVERY_S:
            return
        self._swept = now
        for owner, shelf in list(self._shelves.items()):
            shelf.expire(now)
            if not len(shelf):
                del self._shelves[owner]
