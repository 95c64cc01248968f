"""The turns running in this process, by (owner, conversation id). The hub adds and removes them;
the task poller asks whether one runs in a conversation (a task's result is stored after the
running answer, so that it stays in order). Built before both, so neither needs the other."""

from __future__ import annotations

from .conversation_ids import ConversationIds
from .turn import Turn

__all__ = ["RunningTurns"]


class RunningTurns:
    def __init__(self, ids: ConversationIds) -> None:
        self._ids = ids
        self.by_key: dict[tuple[str, str], Turn] = {}  # (owner, stored conversation id): the hub's

    def running(self, owner: str, conversation_id: str) -> Turn | None:
        """The turn running in this conversation of `owner`'s, by the id a client knows it by."""
        for candidate in self._ids.candidates(owner, conversation_id):
            turn = self.by_key.get((owner, candidate))
            if turn is not None and turn.running:
                return turn
        return None

    def is_running(self, owner: str, conversation_id: str) -> bool:
        return self.running(owner, conversation_id) is not None
