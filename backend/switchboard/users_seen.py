"""The users the host has seen, for the admin console: each signed-in request notes its user, with
where each of their groups comes from, written at most once a minute per user and process (or at
once when the groups changed), in the background: a request never waits for it."""

from __future__ import annotations

import asyncio
import logging
import time

from .config.models import GroupsConfig
from .errors import SwitchboardError
from .identity.users import User
from .store import ConversationStore
from .store.governance.console_rows import ConsoleRecords

__all__ = ["UsersSeen", "group_sources"]

log = logging.getLogger("switchboard")
NOTE_EVERY_S = 60.0


def group_sources(user: User, groups: GroupsConfig) -> dict[str, str]:
    listed = set(groups.groups_for(user.email))
    return {
        group: "groups.yml" if group in listed else "proxy header" if group in user.vouched_groups else "group service"
        for group in sorted(user.groups)
    }


class UsersSeen:
    def __init__(self) -> None:
        self._noted: dict[str, tuple[float, dict[str, str]]] = {}
        self._writes: set[asyncio.Task[None]] = set()

    def note(self, user: User, groups: GroupsConfig, store: ConversationStore) -> None:
        if store.down is not None:
            return
        sources, now = group_sources(user, groups), time.monotonic()
        last = self._noted.get(user.email)
        if last is not None and now - last[0] < NOTE_EVERY_S and last[1] == sources:
            return
        self._noted[user.email] = (now, sources)
        task = asyncio.create_task(self._write(store, user.email, sources), name=f"seen:{user.email}")
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _write(self, store: ConversationStore, email: str, sources: dict[str, str]) -> None:
        try:
            await ConsoleRecords(store).seen(email, sources)
        except SwitchboardError as exc:
            self._noted.pop(email, None)  # tried again with the next request
            log.warning("could not note user %s: %s", email, exc.message, extra={"event": "user_seen_failed"})
