"""Conversations as the turn engine sees them: loaded from the store into a
`ChatSession` at the start of a turn, kept there as it runs (`record`), and
the rules for continuing one: ownership, edits and regeneration (branches),
and compliance levels (a conversation that has run at a level not allowed
with the new one is not continued: a new one starts)."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from ..artifacts import ArtifactStore
from ..auth import User
from ..config.models import ComplianceLevels
from ..errors import BadRequest, NotFound, SwitchboardError
from ..history import AssistantText, CallRecord, HistoryRecord, ToolReply, UserText
from ..store import UNSET, ConversationStore, Message, active_path
from .events import ChatMessage
from .session import ChatSession, new_id

__all__ = ["Conversations", "title_of"]

log = logging.getLogger("switchboard.chat")

TITLE_CHARS = 60
MAX_INCOGNITO = 1000  # incognito conversations kept in memory per process, least recently used dropped


def title_of(text: str) -> str:
    words = " ".join(text.split())
    if len(words) <= TITLE_CHARS:
        return words or "New conversation"
    return words[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"


def record_of(message: Message) -> HistoryRecord:
    data = message.data
    if message.role == "user":
        return UserText(id=message.id, text=message.content, context=data.get("context", ""))
    if message.role == "assistant":
        calls = tuple(CallRecord(c["id"], c["name"], c.get("arguments", "")) for c in data.get("tool_calls") or [])
        return AssistantText(id=message.id, text=message.content, calls=calls, finish_reason=data.get("finish_reason"))
    return ToolReply(id=message.id, call_id=data.get("call_id", ""), tool=data.get("tool", ""),
                     server=data.get("server", ""), ok=bool(data.get("ok")), text=data.get("model_text", message.content),
                     late=bool(data.get("task_result")))  # fmt: skip


def _stored_form(record: HistoryRecord, data: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(role, content, data) of a record as the store keeps it."""
    data = {k: v for k, v in data.items() if v is not None}
    if isinstance(record, UserText):
        return "user", record.text, {**data, "context": record.context}
    if isinstance(record, AssistantText):
        extra: dict[str, Any] = {"tool_calls": [{"id": c.call_id, "name": c.name, "arguments": c.arguments}
                                                for c in record.calls]} if record.calls else {}  # fmt: skip
        if record.finish_reason:
            extra["finish_reason"] = record.finish_reason
        return "assistant", record.text, {**data, **extra}
    content = data.pop("content", record.text)
    return "tool", content, {**data, "call_id": record.call_id, "tool": record.tool, "server": record.server,
                             "ok": record.ok, "model_text": record.text}  # fmt: skip


class Conversations:
    def __init__(self, store: ConversationStore, files: ArtifactStore) -> None:
        self.store = store
        self._files = files
        self._memory: OrderedDict[str, ChatSession] = OrderedDict()  # incognito conversations: never stored

    def keep_incognito(self, session: ChatSession) -> None:
        """Hold an incognito conversation made elsewhere (the OpenAI-compatible door
        seeds one with the caller's earlier messages) until `forget`."""
        self._memory[session.conversation_id] = session
        while len(self._memory) > MAX_INCOGNITO:
            self._memory.popitem(last=False)

    def forget(self, conversation_id: str) -> None:
        self._memory.pop(conversation_id, None)

    # -- loading -----------------------------------------------------------------
    async def session_for(self, user: User, admin: bool, request: ChatMessage, current_id: str,
                          compliance: ComplianceLevels) -> tuple[ChatSession, str | None]:  # fmt: skip
        """The conversation a `chat` continues (or starts), ready for its turn, and
        why a new one was started instead of the one asked for (or None)."""
        conversation_id = request.conversation_id or current_id
        if request.changes_level and request.compliance_level is not None \
                and request.compliance_level not in compliance.names:  # fmt: skip
            raise BadRequest(f"unknown compliance level '{request.compliance_level}'",
                             action=f"Use one of: {', '.join(compliance.names)}.")  # fmt: skip
        session = await self._load(user, admin, conversation_id, incognito=request.incognito)
        reason = None
        if request.changes_level and request.compliance_level != session.compliance_level:
            new_level = request.compliance_level
            if session.history and not _may_move(session.levels_used, new_level, compliance):
                reason = (f"This conversation has run at compliance level {_name(session.compliance_level)}, "
                          f"which may not be mixed with {_name(new_level)}, so a new conversation was started.")  # fmt: skip
                session = ChatSession(user=user, admin=admin, incognito=request.incognito)
            session.compliance_level = new_level
            session.levels_changed = True
            if new_level not in session.levels_used:
                session.levels_used.append(new_level)
        if request.edit_of is not None:
            await self._branch_at(session, request.edit_of)
        elif request.regenerate:
            self._regenerate(session)
        return session, reason

    async def _load(self, user: User, admin: bool, conversation_id: str, *, incognito: bool) -> ChatSession:
        remembered = self._memory.get(conversation_id)
        if remembered is not None:
            if remembered.user.email != user.email:
                raise NotFound("there is no such conversation")
            self._memory.move_to_end(conversation_id)
            return _fresh(remembered, admin)
        if incognito:
            # A stored conversation never turns incognito: an incognito chat there starts its own.
            stored_id = await self.store.get_conversation(conversation_id) is not None
            session = ChatSession(user=user, conversation_id=new_id() if stored_id else conversation_id, admin=admin,
                                  incognito=True)  # fmt: skip
            self._memory[session.conversation_id] = session
            while len(self._memory) > MAX_INCOGNITO:
                self._memory.popitem(last=False)  # the least recently used goes
            return session
        loaded = await self.store.load(conversation_id)  # one read: the row, messages, allowances, files
        if loaded is None:
            return ChatSession(user=user, conversation_id=conversation_id, admin=admin, levels_used=[])
        stored = loaded.conversation
        if stored.owner != user.email:
            raise NotFound("there is no such conversation", action="Start a new conversation.")
        session = ChatSession(
            user=user, conversation_id=conversation_id, admin=admin, stored=True, title=stored.title,
            model=stored.model, saved_model=stored.model, compliance_level=stored.compliance_level,
            levels_used=list(stored.levels_used),
            leaf_id=stored.leaf_id, history=[record_of(m) for m in active_path(loaded.messages, stored.leaf_id)],
            allowed_tools=loaded.allowances,
        )  # fmt: skip
        session.branches = loaded.messages
        for file_id in loaded.files:
            try:
                session.files[file_id] = self._files.get(file_id, owner=user.email)[0]
            except SwitchboardError:
                continue  # removed by retention
        return session

    async def _branch_at(self, session: ChatSession, message_id: str) -> None:
        messages: list[Message] = session.branches
        target = next((m for m in messages if m.id == message_id and m.role == "user"), None)
        if session.incognito:
            ids = [r.id for r in session.history]
            if message_id in ids and isinstance(session.history[ids.index(message_id)], UserText):
                index = ids.index(message_id)
                session.history = session.history[:index]
                session.leaf_id = session.history[-1].id if session.history else None
                return
        if target is None:
            raise NotFound(f"there is no message '{message_id}' of yours to edit in this conversation")
        session.leaf_id = target.parent_id
        session.history = [record_of(m) for m in active_path(messages, target.parent_id)] if target.parent_id else []

    def _regenerate(self, session: ChatSession) -> None:
        last_user = max((i for i, r in enumerate(session.history) if isinstance(r, UserText)), default=None)
        if last_user is None:
            raise BadRequest("there is no question to answer again in this conversation")
        session.history = session.history[: last_user + 1]
        session.leaf_id = session.history[-1].id

    # -- writing -----------------------------------------------------------------
    async def begin(self, session: ChatSession, first_text: str) -> bool:
        """Store a conversation that is not stored yet; True when it was created now."""
        if session.incognito or session.stored:
            if session.stored and session.levels_changed:
                await self.store.update_conversation(session.conversation_id, compliance_level=session.compliance_level,
                                                     levels_used=session.levels_used)  # fmt: skip
            return False
        session.title = title_of(first_text)
        if not session.levels_used:
            session.levels_used = [session.compliance_level]
        await self.store.create_conversation(id=session.conversation_id, owner=session.user.email, title=session.title,
                                             model=session.model, compliance_level=session.compliance_level,
                                             levels_used=session.levels_used)  # fmt: skip
        session.stored, session.saved_model, session.levels_changed = True, session.model, False
        return True

    async def record(self, session: ChatSession, record: HistoryRecord, data: dict[str, Any]) -> None:
        """Keep a record of the running turn: stored (and committed) first, then in memory.

        One transaction stores the message with what came with it: the files it attaches, the
        allowances granted since the last record, and the model when it changed."""
        if session.stored:
            role, content, payload = _stored_form(record, data)
            files = [f["id"] for f in payload.get("files", [])] if isinstance(record, UserText) else []
            allowances = list(session.new_allowances)
            new_model = isinstance(record, AssistantText) and record.finish_reason and session.model != session.saved_model
            write = asyncio.ensure_future(self.store.add_message(
                session.conversation_id, id=record.id, parent_id=session.leaf_id, role=role, content=content,
                data=payload, files=files, allowances=allowances, model=session.model if new_model else UNSET))  # fmt: skip
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                # The turn was stopped while the write ran: wait for it, and keep memory in step
                # with the store if it committed (the cancelled answer is stored after it).
                if await _committed(write):
                    _remember(session, record, allowances, bool(new_model))
                raise
            _remember(session, record, allowances, bool(new_model))
        else:
            _remember(session, record, [], False)


def _remember(session: ChatSession, record: HistoryRecord, allowances_stored: list[str], model_stored: bool) -> None:
    del session.new_allowances[: len(allowances_stored)]
    if model_stored:
        session.saved_model = session.model
    session.history.append(record)
    session.leaf_id = record.id


async def _committed(write: asyncio.Future[Any]) -> bool:
    try:
        await write
    except (asyncio.CancelledError, Exception):  # noqa: BLE001 - a failed write is one that did not commit
        return False
    return True


def _fresh(session: ChatSession, admin: bool) -> ChatSession:
    """An incognito conversation's session for a new turn (nothing of the last turn's waiting)."""
    session.admin = admin
    session.turn_files = []
    session.trimmed = 0
    return session


def _may_move(used: list[str | None], new: str | None, compliance: ComplianceLevels) -> bool:
    allowed = next((set(level.allowed_with) for level in compliance.levels if level.name == new), set())
    return all(level == new or level in allowed for level in used)


def _name(level: str | None) -> str:
    return level if level is not None else "none"

