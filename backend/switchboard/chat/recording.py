"""Storing a turn: few transactions, with the events that need durability waiting for them.

A record of the turn is kept at once (the conversation's history and leaf move; the model sees
it), and stored by the next commit, together with every other record kept since, the files it
attaches, the allowances granted and the model or compliance level that changed. Before an
event that announces a message (`tool_result`, `message_done`) the loop commits and waits:
what a client was told is never lost.

A round's last result is committed while the next model request is sent; its `tool_result` waits
for that commit and goes out before the next call's first event (`PendingWrites.announcement`).

Where no event waits, a commit runs in the background (`commit_soon`) and the turn goes on: the
question of a stored conversation while the model answers, and a round's call message while its
calls run (a process that dies during a long call leaves a conversation that says which call was
running). On SQLite that write waits until the calls have run for 0.2 s (`commit_later`): calls
that end sooner are stored with their results, one transaction instead of two. On Postgres it
starts at once: there a lone message is one statement, two together need a transaction. The
next commit waits for it first, and stores what it could not. `begin` creates a new
conversation together with its first question, committed before the `conversation` event
announces it. Commits of one turn never overlap, so messages are stored in the order they were
kept.

The write of the answer's last message also deletes the turn's claim on the conversation (several
processes on one Postgres: store/live.py), so the conversation is free once its answer is stored.

A stored tool turn is thus three transactions (a new conversation with its question, beside the
first model request; the call with its result; the answer), and a fourth beside a call that runs
longer than 0.2 s (on Postgres: four single statements, one beside the call), where it was one
per message.
"""

from __future__ import annotations

import asyncio
import logging
from typing import cast, overload

from ..history import AssistantText, HistoryRecord, ToolReply, UserText
from ..store import UNSET, ConversationStore, NewConversation, NewMessage
from ..store.message_data import AssistantData, RoleData, ToolCallData, ToolData, UserData
from ..store.records import Role
from .turn_state import TurnState, Unsaved

__all__ = ["TurnRecorder", "stored_form", "title_of"]

log = logging.getLogger("switchboard.chat")

TITLE_CHARS = 60


def title_of(text: str) -> str:
    words = " ".join(text.split())
    if len(words) <= TITLE_CHARS:
        return words or "New conversation"
    return words[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"


def stored_form(record: HistoryRecord, data: RoleData) -> tuple[Role, str, RoleData]:
    """(role, content, data) of a record as the store keeps it (``keep`` checked that ``data`` is
    of the record's role)."""
    if isinstance(record, UserText):
        user: UserData = {**cast(UserData, _given(data)), "context": record.context}
        return "user", record.text, user
    if isinstance(record, AssistantText):
        assistant = cast(AssistantData, _given(data))
        if record.calls:
            calls: list[ToolCallData] = [
                {"id": c.call_id, "name": c.name, "arguments": c.arguments} for c in record.calls
            ]
            assistant["tool_calls"] = calls
        if record.finish_reason:
            assistant["finish_reason"] = record.finish_reason
        return "assistant", record.text, assistant
    assert isinstance(record, ToolReply)
    tool = cast(ToolData, _given(data))
    content = tool.pop("content", record.text)
    reply: ToolData = {
        **tool,
        "call_id": record.call_id,
        "tool": record.tool,
        "server": record.server,
        "ok": record.ok,
        "model_text": record.text,
    }
    return "tool", content, reply


def _given(data: RoleData) -> dict[str, object]:
    return {k: v for k, v in data.items() if v is not None}


class TurnRecorder:
    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    @overload
    def keep(self, turn: TurnState, record: UserText, data: UserData) -> None: ...
    @overload
    def keep(self, turn: TurnState, record: AssistantText, data: AssistantData) -> None: ...
    @overload
    def keep(self, turn: TurnState, record: ToolReply, data: ToolData) -> None: ...
    def keep(self, turn: TurnState, record: HistoryRecord, data: RoleData) -> None:
        """The record joins the conversation now (with ``data`` of its role); it is stored by the
        next commit."""
        conversation = turn.conversation
        if conversation.incognito:  # its files go when it ends (Conversations.turn_ended)
            if isinstance(record, ToolReply):  # (keep's overloads: its data is ToolData)
                artifacts = cast(ToolData, data).get("artifacts") or []
                conversation.made_files.extend(a["id"] for a in artifacts if a.get("id"))
        else:
            turn.writes.unsaved.append(Unsaved(record, conversation.leaf_id, data))
        conversation.history.append(record)
        conversation.leaf_id = record.id

    async def begin(self, turn: TurnState, first_text: str) -> bool:
        """Store what the turn starts with; True when the conversation was created now."""
        conversation = turn.conversation
        if conversation.incognito:
            return False
        if conversation.stored:
            self.commit_soon(turn)
            return False
        conversation.title = title_of(first_text)
        if not conversation.levels_used:
            conversation.levels_used = [conversation.compliance_level]
        await self.commit(turn)
        return True

    def commit_soon(self, turn: TurnState) -> None:
        """Start a commit and go on; the next commit waits for it (and retries what it could not store)."""
        _no_timer(turn)
        if not turn.writes.unsaved and not turn.writes.levels_changed:
            return
        turn.writes.writing = asyncio.ensure_future(self._write(turn, turn.writes.writing))
        turn.writes.writing.add_done_callback(_seen)

    def commit_later(self, turn: TurnState, delay_s: float) -> None:
        """`commit_soon` in `delay_s`, unless a commit comes first (and stores it all in one go);
        at once where one write per message costs less than writing them together (Postgres)."""
        if turn.conversation.incognito or not turn.writes.unsaved:
            return
        if not self.store.joins_writes:
            self.commit_soon(turn)
            return
        _no_timer(turn)
        turn.writes.commit_timer = asyncio.get_running_loop().call_later(delay_s, self.commit_soon, turn)

    async def commit(self, turn: TurnState) -> None:
        """Store what was kept since the last commit in one transaction; returns once committed
        (raises StoreError when it could not be). A turn stopped meanwhile lets the write finish."""
        _no_timer(turn)
        if turn.conversation.incognito:
            return
        if not turn.writes.unsaved and not turn.writes.levels_changed and turn.conversation.stored:
            if turn.writes.writing is not None:
                await _settled(turn.writes.writing)
            return
        write = turn.writes.writing = asyncio.ensure_future(self._write(turn, turn.writes.writing))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            await _settled(write)
            raise

    async def _write(self, turn: TurnState, before: asyncio.Future[None] | None) -> None:
        if before is not None:
            await _settled(before)  # its records were taken from `unsaved` only if it stored them
        conversation = turn.conversation
        batch, allowances = list(turn.writes.unsaved), list(turn.writes.new_allowances)
        answered = any(isinstance(u.record, AssistantText) and u.record.finish_reason for u in batch)
        new_model = answered and turn.model is not None and turn.model != conversation.model
        creating = not conversation.stored
        messages = []
        files: list[str] = []
        for unsaved in batch:
            role, content, payload = stored_form(unsaved.record, unsaved.data)
            messages.append(NewMessage(unsaved.record.id, unsaved.parent_id, role, content, payload))
            if isinstance(unsaved.record, UserText):
                files.extend(f["id"] for f in cast(UserData, payload).get("files", []))
        levels = (
            (conversation.compliance_level, conversation.levels_used)
            if turn.writes.levels_changed and not creating
            else None
        )
        create = (
            NewConversation(
                turn.user.email,
                conversation.title,
                turn.model or conversation.model,
                conversation.compliance_level,
                conversation.levels_used,
            )
            if creating
            else None
        )
        # The answer's last message frees the conversation for the next turn in the same transaction:
        # a process that dies right after it leaves no claim behind (docs/reliability.md).
        release = turn.writes.claim if answered else None
        await self.store.append(
            conversation.id,
            messages,
            files=files,
            allowances=allowances,
            create=create,
            model=turn.model if new_model and not creating else UNSET,
            levels=levels,
            release_claim=release,
        )
        if release is not None:
            turn.writes.claim = None
        del turn.writes.unsaved[: len(batch)]
        del turn.writes.new_allowances[: len(allowances)]
        if creating:
            conversation.stored, conversation.model = True, turn.model or conversation.model
        elif new_model:
            conversation.model = turn.model
        turn.writes.levels_changed = False


def _no_timer(turn: TurnState) -> None:
    if turn.writes.commit_timer is not None:
        turn.writes.commit_timer.cancel()
        turn.writes.commit_timer = None


async def _settled(write: asyncio.Future[None]) -> None:
    """Wait for a write to end, however it ends (its failure is the next write's to find). A
    caller cancelled meanwhile still waits for the end, then is cancelled."""
    cancelled = False
    while not write.done():
        try:
            await asyncio.wait({write})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _seen(write: asyncio.Future[None]) -> None:
    if not write.cancelled() and write.exception() is not None:
        log.warning(
            "store: a turn's background write failed; the next commit tries again", extra={"event": "store_write_retry"}
        )
