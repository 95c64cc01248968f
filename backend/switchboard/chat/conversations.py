"""Conversations as the turn engine sees them: loaded from the store into a
`ChatSession` at the start of a turn, kept there as it runs (`record`), and
the rules for continuing one: ownership, edits and regeneration (branches),
and compliance levels (a conversation that has run at a level not allowed
with the new one is not continued: a new one starts).

An id a client picks is its user's own: the store keeps that conversation under
`scoped_id(user, id)`, so no one can take or probe another user's names.
Incognito conversations stay in memory (`IncognitoMemory`, per user) and their
files are deleted when they leave it; a conversation past `max_chars` of stored
text is not continued."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from ..artifacts import ArtifactStore
from ..auth import User
from ..config.models import ComplianceLevels
from ..errors import BadRequest, NotFound, SwitchboardError
from ..history import AssistantText, CallRecord, HistoryRecord, ToolReply, UserText
from ..store import UNSET, Conversation, ConversationStore, Message, active_path
from .app_context import app_contexts
from .events import CONVERSATION_ID, ChatMessage
from .incognito import IncognitoMemory
from .session import ChatSession, new_id

__all__ = ["ConversationLimits", "Conversations", "scoped_id", "title_of"]

log = logging.getLogger("switchboard.chat")

TITLE_CHARS = 60
_ID = re.compile(CONVERSATION_ID)


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


@dataclass(frozen=True, slots=True)
class ConversationLimits:
    max_chars: int = 10_000_000  # a conversation's stored text (every branch); past it, no new turn
    incognito_per_user: int = 20
    incognito_idle_s: float = 24 * 3600


def scoped_id(owner: str, client_id: str) -> str:
    """The store's id of the conversation a client named `client_id` for `owner`: ids a client
    picks live in the owner's own namespace, so another user can neither take nor probe them."""
    digest = hashlib.sha256(f"{owner}\x00{client_id}".encode()).digest()
    return "u" + base64.urlsafe_b64encode(digest[:18]).decode()  # 25 characters: a valid conversation id


class Conversations:
    def __init__(self, store: ConversationStore, files: ArtifactStore, limits: ConversationLimits | None = None) -> None:
        self.store = store
        self._files = files
        self.limits = limits or ConversationLimits()
        self._memory = IncognitoMemory(self._drop_files, per_user=self.limits.incognito_per_user,
                                       idle_s=self.limits.incognito_idle_s)  # fmt: skip

    # -- identity ----------------------------------------------------------------
    async def find(self, user: User, conversation_id: str) -> Conversation:
        """The user's stored conversation by the id a client knows it by (the store's own, or one
        the client picked); NotFound for anyone else's and for none."""
        if _ID.match(conversation_id):
            for candidate in (conversation_id, scoped_id(user.email, conversation_id)):
                found = await self.store.get_conversation(candidate)
                if found is not None:
                    if found.owner != user.email:
                        break  # another user's: the same answer as none
                    return found
            else:
                for candidate in await self._earlier_ids(user, conversation_id):
                    found = await self.store.get_conversation(candidate)
                    if found is not None and found.owner == user.email:
                        return found
        raise NotFound("there is no such conversation", action="It may have been deleted; pick another one.")

    async def _earlier_ids(self, user: User, name: str) -> list[str]:
        """Where a conversation the client named `name` was stored under a spelling the user's
        address had before addresses were normalized (store migration 0007)."""
        return [scoped_id(spelling, name) for spelling in await self.store.old_spellings(user.email)]

    # -- incognito files ---------------------------------------------------------
    def turn_ended(self, session: ChatSession) -> None:
        """An incognito conversation that memory no longer holds (a /v1 request, or one pushed
        out while its turn ran) ends with its turn: its files go."""
        if session.incognito and not self._memory.holds(session):
            self._drop_files(session)

    def _drop_files(self, session: ChatSession) -> None:
        file_ids = [*session.files, *session.made_files]
        session.files, session.made_files = {}, []
        if not file_ids:
            return
        owner = session.user.email

        def delete() -> None:
            for file_id in file_ids:
                self._files.delete(file_id, owner=owner)

        try:
            asyncio.get_running_loop().run_in_executor(None, delete)
        except RuntimeError:  # no event loop (tests, shutdown): delete here
            delete()

    # -- loading -----------------------------------------------------------------
    async def session_for(self, user: User, request: ChatMessage, current_id: str,
                          compliance: ComplianceLevels) -> tuple[ChatSession, str | None]:  # fmt: skip
        """The conversation a `chat` continues (or starts), ready for its turn, and
        why a new one was started instead of the one asked for (or None)."""
        conversation_id = request.conversation_id or current_id
        if request.changes_level and request.compliance_level is not None \
                and request.compliance_level not in compliance.names:  # fmt: skip
            raise BadRequest(f"unknown compliance level '{request.compliance_level}'",
                             action=f"Use one of: {', '.join(compliance.names)}.")  # fmt: skip
        # An id the client picked (not the connection's own, which the server made) is the user's own.
        picked = conversation_id != current_id
        session = await self._load(user, conversation_id, incognito=request.incognito, picked=picked)
        reason = None
        if request.changes_level and request.compliance_level != session.compliance_level:
            new_level = request.compliance_level
            if session.history and not _may_move(session.levels_used, new_level, compliance):
                reason = (f"This conversation has run at compliance level {_name(session.compliance_level)}, "
                          f"which may not be mixed with {_name(new_level)}, so a new conversation was started.")  # fmt: skip
                session = ChatSession(user=user, incognito=request.incognito)
                if request.incognito:
                    self._memory.keep(session)
            session.compliance_level = new_level
            session.levels_changed = True
            if new_level not in session.levels_used:
                session.levels_used.append(new_level)
        if request.edit_of is not None:
            await self._branch_at(session, request.edit_of)
        elif request.regenerate:
            self._regenerate(session)
        return session, reason

    async def call_session(self, user: User, conversation: Conversation) -> ChatSession:
        """What a tool call needs of a stored conversation of the user's (its level, allowances and
        attached files; not its messages): for an MCP App's own calls."""
        if conversation.owner != user.email:
            raise NotFound("there is no such conversation")
        session = ChatSession(user=user, conversation_id=conversation.id, stored=True,
                              compliance_level=conversation.compliance_level, levels_used=list(conversation.levels_used),
                              allowed_tools=await self.store.allowances(conversation.id))  # fmt: skip
        for file_id in await self.store.files(conversation.id):
            try:
                session.files[file_id] = self._files.get(file_id, owner=user.email)[0]
            except SwitchboardError:
                continue  # removed by retention
        return session

    async def _load(self, user: User, conversation_id: str, *, incognito: bool, picked: bool) -> ChatSession:
        remembered = self._memory.get(user.email, conversation_id)
        if remembered is not None:
            self._check_size(sum(len(getattr(r, "text", "")) for r in remembered.history))
            return _fresh(remembered, user)
        if incognito:
            # A stored conversation never turns incognito: an incognito chat there starts its own.
            mine = [conversation_id, scoped_id(user.email, conversation_id)] if picked else [conversation_id]
            existing = [await self.store.get_conversation(c) for c in mine]
            session = ChatSession(user=user, incognito=True,
                                  conversation_id=new_id() if any(c is not None and c.owner == user.email for c in existing)
                                  else conversation_id)  # fmt: skip
            self._memory.keep(session)
            return session
        loaded = await self.store.load(conversation_id)  # one read: the row, messages, allowances, files
        if loaded is None and picked:
            name, conversation_id = conversation_id, scoped_id(user.email, conversation_id)
            loaded = await self.store.load(conversation_id)
            for earlier in await self._earlier_ids(user, name) if loaded is None else []:
                if (loaded := await self.store.load(earlier)) is not None:
                    conversation_id = earlier
                    break
        if loaded is None:
            return ChatSession(user=user, conversation_id=conversation_id, levels_used=[])
        stored = loaded.conversation
        if stored.owner != user.email:
            raise NotFound("there is no such conversation", action="Start a new conversation.")
        self._check_size(sum(len(m.content) for m in loaded.messages))
        session = ChatSession(
            user=user, conversation_id=conversation_id, stored=True, title=stored.title,
            model=stored.model, saved_model=stored.model, compliance_level=stored.compliance_level,
            levels_used=list(stored.levels_used),
            leaf_id=stored.leaf_id, history=[record_of(m) for m in active_path(loaded.messages, stored.leaf_id)],
            allowed_tools=loaded.allowances,
        )  # fmt: skip
        session.branches = loaded.messages
        session.app_context = app_contexts(active_path(loaded.messages, stored.leaf_id))
        for file_id in loaded.files:
            try:
                session.files[file_id] = self._files.get(file_id, owner=user.email)[0]
            except SwitchboardError:
                continue  # removed by retention
        return session

    def _check_size(self, chars: int) -> None:
        if chars > self.limits.max_chars:
            raise BadRequest(f"this conversation is too long to continue ({chars:,} characters; the limit is "
                             f"{self.limits.max_chars:,})",
                             action="Start a new conversation; this one can still be read and exported.")  # fmt: skip

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

    async def record_lost(self, conversation_id: str, reason: str) -> None:
        """Store a failed answer for a turn whose process died: the conversation shows why, and
        its history stays one a model accepts (every open tool call answered)."""
        stored = await self.store.get_conversation(conversation_id)
        if stored is None:
            return
        messages = active_path(await self.store.messages(conversation_id), stored.leaf_id)
        answered = {m.data.get("call_id") for m in messages if m.role == "tool"}
        parent = stored.leaf_id
        open_calls = [c for m in messages if m.role == "assistant" for c in m.data.get("tool_calls", [])
                      if c.get("id") not in answered]  # fmt: skip
        for call in open_calls:
            reply_id = new_id()
            await self.store.add_message(conversation_id, id=reply_id, parent_id=parent, role="tool", content=reason,
                                         data={"call_id": call["id"], "tool": call.get("name", ""), "server": "",
                                               "ok": False, "model_text": reason})  # fmt: skip
            parent = reply_id
        await self.store.add_message(conversation_id, id=new_id(), parent_id=parent, role="assistant", content="",
                                     data={"finish_reason": "error", "error": {"code": "internal", "message": reason,
                                           "action": "Send your message again."}})  # fmt: skip

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
            if session.incognito:  # its files go when it ends (turn_ended, or memory drops it)
                session.made_files.extend(a["id"] for a in data.get("artifacts") or [] if a.get("id"))
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


def _fresh(session: ChatSession, user: User) -> ChatSession:
    """An incognito conversation's session for a new turn (nothing of the last turn's waiting),
    as the user is now (groups and admin worked out for this turn)."""
    session.user = user
    session.turn_files = []
    session.trimmed = 0
    return session


def _may_move(used: list[str | None], new: str | None, compliance: ComplianceLevels) -> bool:
    allowed = next((set(level.allowed_with) for level in compliance.levels if level.name == new), set())
    return all(level == new or level in allowed for level in used)


def _name(level: str | None) -> str:
    return level if level is not None else "none"

