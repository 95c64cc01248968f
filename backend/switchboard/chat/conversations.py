"""Conversations as the turn engine sees them: loaded from the store into a
`ConversationState` at the start of a turn, handed to the turn (`TurnState`) with the user and
the door's preferences, and the rules for continuing one: ownership, edits and regeneration
(branches), and compliance levels (a conversation that has run at a level not allowed with the
new one is not continued: a new one starts). A turn's records are stored by `recorder`
(chat/recording.py).

An id a client picks is its user's own, for stored and incognito conversations alike: the
conversation is kept under `ids.scoped(user, id)`, a keyed hash (chat/conversation_ids.py), so no
one can take, probe or compute another user's ids. Incognito conversations stay in memory (`IncognitoMemory`, per user) and their
files are deleted when they leave it; a conversation of one turn (`/v1`'s) is never kept, and
its files go when its turn ends. A conversation past `max_chars` of stored text is not continued."""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass

from ..config.models import ComplianceLevels
from ..errors import BadRequest, NotFound, SwitchboardError
from ..files.artifacts import ArtifactStore
from ..history import UserText
from ..identity.users import User
from ..store import Conversation, ConversationStore, Message, NewMessage, active_path
from .conversation_ids import ConversationIds, legacy_scoped_id
from .conversation_state import ConversationState, new_id
from .events import CONVERSATION_ID, ChatMessage
from .incognito.memory import IncognitoMemory
from .incognito.sealed import IncognitoSeal, OpenedState
from .prepared_contexts import PreparedContexts, record_of
from .questions import ASK, Preferences
from .recording import TurnRecorder
from .turn_state import PendingWrites, TurnState

__all__ = ["ConversationLimits", "Conversations"]

log = logging.getLogger("switchboard.chat")

_ID = re.compile(CONVERSATION_ID)


@dataclass(frozen=True, slots=True)
class ConversationLimits:
    max_chars: int = 10_000_000  # a conversation's stored text (every branch); past it, no new turn
    incognito_per_user: int = 20
    incognito_idle_s: float = 24 * 3600


class Conversations:
    def __init__(
        self,
        store: ConversationStore,
        files: ArtifactStore,
        limits: ConversationLimits | None = None,
        seal: IncognitoSeal | None = None,
        ids: ConversationIds | None = None,
    ) -> None:
        self.recorder = TurnRecorder(store)
        self.contexts = PreparedContexts()  # stored conversations' contexts, kept between turns
        self.ids = ids or ConversationIds()  # the ids of conversations clients named
        self._files = files
        self.limits = limits or ConversationLimits()
        self.seal = seal  # incognito conversations held by the page (chat/incognito/sealed.py); None: memory only
        self._memory = IncognitoMemory(
            self._drop_files, per_user=self.limits.incognito_per_user, idle_s=self.limits.incognito_idle_s
        )

    @property
    def store(self) -> ConversationStore:
        return self.recorder.store

    def use_store(self, store: ConversationStore) -> None:
        """The store opened (at start-up, or later when it was down)."""
        self.recorder.store = store
        self.contexts.clear()

    # -- identity ----------------------------------------------------------------
    async def find(self, user: User, conversation_id: str) -> Conversation:
        """The user's stored conversation by the id a client knows it by (the store's own, or one
        the client picked); NotFound for anyone else's and for none."""
        if _ID.match(conversation_id):
            candidates = [
                *self.ids.candidates(user.email, conversation_id),
                *await self._earlier_ids(user, conversation_id),
            ]
            for candidate in candidates:
                found = await self.store.get_conversation(candidate)
                if found is not None and found.owner == user.email:  # another user's: the same answer as none
                    return found
        raise NotFound("there is no such conversation", action="It may have been deleted; pick another one.")

    async def _earlier_ids(self, user: User, name: str) -> list[str]:
        """Where a conversation the client named `name` was stored under a spelling the user's
        address had before addresses were normalized (store migration 0007)."""
        return [legacy_scoped_id(spelling, name) for spelling in await self.store.old_spellings(user.email)]

    # -- incognito files ---------------------------------------------------------
    def turn_ended(self, conversation: ConversationState) -> None:
        """An incognito conversation that memory does not hold (one of one turn, or one pushed
        out while its turn ran) ends with its turn: its files go."""
        if conversation.incognito and not self._memory.holds(conversation):
            self._drop_files(conversation)

    def _drop_files(self, conversation: ConversationState) -> None:
        file_ids = [*conversation.files, *conversation.made_files]
        conversation.files, conversation.made_files = {}, []
        if not file_ids:
            return
        owner = conversation.owner

        def delete() -> None:
            for file_id in file_ids:
                self._files.delete(file_id, owner=owner)

        try:
            asyncio.get_running_loop().run_in_executor(None, delete)
        except RuntimeError:  # no event loop (tests, shutdown): delete here
            delete()

    # -- loading -----------------------------------------------------------------
    async def turn_for(
        self,
        user: User,
        request: ChatMessage,
        current_id: str,
        compliance: ComplianceLevels,
        preferences: Preferences = ASK,
    ) -> TurnState:
        """The turn a `chat` starts: the conversation it continues (or starts), ready for it, and
        (`moved`) why a new one was started instead of the one asked for."""
        conversation_id = request.conversation_id or current_id
        if (
            request.changes_level
            and request.compliance_level is not None
            and request.compliance_level not in compliance.names
        ):
            raise BadRequest(
                f"unknown compliance level '{request.compliance_level}'",
                action=f"Use one of: {', '.join(compliance.names)}.",
            )
        # An id the client picked (not the connection's own, which the server made) is the user's own.
        picked = conversation_id != current_id
        if request.incognito and request.incognito_state is not None and self.seal is not None:
            conversation = await self._unseal(user, conversation_id, request.incognito_state, picked=picked)
        else:
            conversation = await self._load(user, conversation_id, incognito=request.incognito, picked=picked)
        moved: str | None = None
        writes = PendingWrites()
        if request.changes_level and request.compliance_level != conversation.compliance_level:
            new_level = request.compliance_level
            if conversation.history and not _may_move(conversation.levels_used, new_level, compliance):
                moved = (
                    f"This conversation has run at compliance level {_name(conversation.compliance_level)}, "
                    f"which may not be mixed with {_name(new_level)}, so a new conversation was started."
                )
                conversation = ConversationState(owner=user.email, incognito=request.incognito)
                if request.incognito:
                    self._memory.keep(conversation)
            conversation.compliance_level = new_level
            writes.levels_changed = True
            if new_level not in conversation.levels_used:
                conversation.levels_used.append(new_level)
        turn = TurnState(user=user, conversation=conversation, preferences=preferences, moved=moved, writes=writes)
        if request.edit_of is not None:
            await self._branch_at(conversation, request.edit_of)
        elif request.regenerate:
            _regenerate(conversation)
        return turn

    async def _unseal(self, user: User, conversation_id: str, sealed: str, *, picked: bool) -> ConversationState:
        """The incognito conversation the page sent back (sealed by a process of this deployment):
        it replaces whatever this process's memory holds of it. A client may name it by the id
        the server gave it or by the name it picked."""
        assert self.seal is not None
        try:
            opened = self.seal.open(sealed, user.email, conversation_id)
        except BadRequest:
            if not picked:
                raise
            conversation_id = self.ids.scoped(user.email, conversation_id)
            opened = self.seal.open(sealed, user.email, conversation_id)
        self._check_size(sum(len(getattr(r, "text", "")) for r in opened.history))
        conversation = ConversationState(
            owner=user.email,
            id=conversation_id,
            incognito=True,
            history=opened.history,
            compliance_level=opened.compliance_level,
            levels_used=opened.levels_used,
            allowed_tools=opened.allowed_tools,
            made_files=opened.made_files,
            leaf_id=opened.history[-1].id if opened.history else None,
        )
        await self._attach_files(conversation, opened.files)
        self._memory.keep(conversation)
        return conversation

    def sealed_state(self, conversation: ConversationState) -> str | None:
        """An incognito conversation as the page holds it between turns (None without a seal)."""
        if self.seal is None:
            return None
        return self.seal.seal(
            conversation.owner,
            conversation.id,
            OpenedState(
                history=conversation.history,
                compliance_level=conversation.compliance_level,
                levels_used=conversation.levels_used,
                allowed_tools=conversation.allowed_tools,
                files=list(conversation.files),
                made_files=conversation.made_files,
            ),
        )

    async def call_turn(self, user: User, stored: Conversation) -> TurnState:
        """What a tool call needs of a stored conversation of the user's (its level, allowances and
        attached files; not its messages): an MCP App's own calls, each a small turn of its own."""
        if stored.owner != user.email:
            raise NotFound("there is no such conversation")
        conversation = ConversationState(
            owner=user.email,
            id=stored.id,
            stored=True,
            compliance_level=stored.compliance_level,
            levels_used=list(stored.levels_used),
            allowed_tools=await self.store.allowances(stored.id),
        )
        await self._attach_files(conversation, await self.store.files(stored.id))
        return TurnState(user=user, conversation=conversation)

    async def _attach_files(self, conversation: ConversationState, file_ids: list[str]) -> None:
        for file_id in file_ids:
            try:
                conversation.files[file_id] = (await self._files.aget(file_id, owner=conversation.owner))[0]
            except SwitchboardError:
                continue  # removed by retention

    async def _load(self, user: User, conversation_id: str, *, incognito: bool, picked: bool) -> ConversationState:
        scoped = self.ids.scoped(user.email, conversation_id)
        remembered = self._memory.get(user.email, conversation_id)
        if remembered is None and picked:
            remembered = self._memory.get(user.email, scoped)
        if remembered is not None:
            self._check_size(sum(len(getattr(r, "text", "")) for r in remembered.history))
            return remembered
        if incognito:
            # As for stored chats: another user's conversation id is not found, and a name the
            # client picked becomes the user's own id. A stored conversation never turns
            # incognito: an incognito chat there starts its own.
            existing = await self.store.get_conversation(conversation_id)
            if existing is not None and existing.owner != user.email:
                raise NotFound("there is no such conversation", action="Start a new conversation.")
            wanted = scoped if picked and existing is None else conversation_id
            taken = existing is not None or (
                wanted != conversation_id and await self.store.get_conversation(wanted) is not None
            )
            conversation = ConversationState(owner=user.email, incognito=True, id=new_id() if taken else wanted)
            self._memory.keep(conversation)
            return conversation
        # One read: the row, the messages not held yet, allowances and files (of the id as given,
        # else the user's own).
        held = self.contexts.after(conversation_id, scoped) if picked else self.contexts.after(conversation_id)
        loaded = await (
            self.store.load(conversation_id, scoped, after=held)
            if picked
            else self.store.load(conversation_id, after=held)
        )
        if loaded is None and picked:  # stored before ids were keyed, or under a spelling from before 0007
            loaded = await self.store.load(
                legacy_scoped_id(user.email, conversation_id), *await self._earlier_ids(user, conversation_id)
            )
        if loaded is None:
            return ConversationState(owner=user.email, id=scoped if picked else conversation_id)
        stored = loaded.conversation
        conversation_id = stored.id
        if stored.owner != user.email:
            raise NotFound("there is no such conversation", action="Start a new conversation.")
        prepared = self.contexts.prepare(loaded, held.get(conversation_id, 0))
        if prepared is None:  # what this process held of it is out of date: read it whole
            loaded = await self.store.load(conversation_id)
            if loaded is None:
                return ConversationState(owner=user.email, id=conversation_id)
            stored = loaded.conversation
            prepared = self.contexts.prepare(loaded, 0)
            assert prepared is not None
        self._check_size(prepared.chars)
        conversation = ConversationState(
            owner=user.email,
            id=conversation_id,
            stored=True,
            title=stored.title,
            model=stored.model,
            compliance_level=stored.compliance_level,
            levels_used=list(stored.levels_used),
            leaf_id=stored.leaf_id,
            history=list(prepared.history),
            branches=prepared.messages,
            allowed_tools=loaded.allowances,
            app_context=list(prepared.app_context),
        )
        await self._attach_files(conversation, loaded.files)
        return conversation

    def _check_size(self, chars: int) -> None:
        if chars > self.limits.max_chars:
            raise BadRequest(
                f"this conversation is too long to continue ({chars:,} characters; the limit is "
                f"{self.limits.max_chars:,})",
                action="Start a new conversation; this one can still be read and exported.",
            )

    async def _branch_at(self, conversation: ConversationState, message_id: str) -> None:
        messages: list[Message] = conversation.branches
        target = next((m for m in messages if m.id == message_id and m.role == "user"), None)
        if conversation.incognito:
            ids = [r.id for r in conversation.history]
            if message_id in ids and isinstance(conversation.history[ids.index(message_id)], UserText):
                conversation.history = conversation.history[: ids.index(message_id)]
                conversation.leaf_id = conversation.history[-1].id if conversation.history else None
                return
        if target is None:
            raise NotFound(f"there is no message '{message_id}' of yours to edit in this conversation")
        conversation.leaf_id = target.parent_id
        conversation.history = (
            [record_of(m) for m in active_path(messages, target.parent_id)] if target.parent_id else []
        )

    # -- a turn lost with its process ------------------------------------------------
    async def record_lost(self, conversation_id: str, reason: str) -> None:
        """Store a failed answer for a turn whose process died: the conversation shows why, and
        its history stays one a model accepts (every open tool call answered)."""
        stored = await self.store.get_conversation(conversation_id)
        if stored is None:
            return
        messages = active_path(await self.store.messages(conversation_id), stored.leaf_id)
        answered = {m.data.get("call_id") for m in messages if m.role == "tool"}
        open_calls = [
            c
            for m in messages
            if m.role == "assistant"
            for c in m.data.get("tool_calls", [])
            if c.get("id") not in answered
        ]
        replies, parent = [], stored.leaf_id
        for call in open_calls:
            reply = NewMessage(
                new_id(),
                parent,
                "tool",
                reason,
                {"call_id": call["id"], "tool": call.get("name", ""), "server": "", "ok": False, "model_text": reason},
            )
            replies.append(reply)
            parent = reply.id
        failed = NewMessage(
            new_id(),
            parent,
            "assistant",
            "",
            {
                "finish_reason": "error",
                "error": {"code": "internal", "message": reason, "action": "Send your message again."},
            },
        )
        await self.store.append(conversation_id, [*replies, failed])  # one transaction: all or nothing


def _regenerate(conversation: ConversationState) -> None:
    last_user = max((i for i, r in enumerate(conversation.history) if isinstance(r, UserText)), default=None)
    if last_user is None:
        raise BadRequest("there is no question to answer again in this conversation")
    conversation.history = conversation.history[: last_user + 1]
    conversation.leaf_id = conversation.history[-1].id


def _may_move(used: list[str | None], new: str | None, compliance: ComplianceLevels) -> bool:
    allowed = next((set(level.allowed_with) for level in compliance.levels if level.name == new), set())
    return all(level == new or level in allowed for level in used)


def _name(level: str | None) -> str:
    return level if level is not None else "none"
