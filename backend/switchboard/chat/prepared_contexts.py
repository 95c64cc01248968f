"""A stored conversation's context, prepared once and kept by the process between its turns.

A turn needs the conversation's messages (every branch, for edits), its active branch as history
records, their size and the context MCP Apps gave. Worked out from the whole conversation each
turn, that cost grows with the conversation. Here it is kept per conversation (`Prepared`), and a
turn reads from the store only the row and the messages written since (`after`: the highest seq
held), in the same call that reads its allowances and files; the store stays the truth:

- messages are only added (a child after its parent): the new ones are appended, and when the
  new leaf's branch runs through the leaf held, the branch grows by them (the usual turn, this
  process's or another's);
- any other leaf (an edit, a regenerate, a branch switch, another process's edit) walks the branch
  again from the messages held, each message's record made once;
- a conversation deleted and made again under its id (`created_at`), a message changed in place
  (`data_version`: an app's data) or a count that does not add up: read whole again.

Trimming tool results when a model call overflows the window (chat/context.py) is a view made per
model call from these records, never kept here. Incognito conversations are not stored, so not
kept. Bounded: the least recently used conversations go first."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime

from ..history import AssistantText, CallRecord, HistoryRecord, ToolReply, UserText
from ..store import Message, StoredConversation, active_path
from .apps.context import app_contexts

__all__ = ["Prepared", "PreparedContexts", "record_of"]


def record_of(message: Message) -> HistoryRecord:
    data = message.data
    if message.role == "user":
        return UserText(id=message.id, text=message.content, context=data.get("context", ""))
    if message.role == "assistant":
        calls = tuple(CallRecord(c["id"], c["name"], c.get("arguments", "")) for c in data.get("tool_calls") or [])
        return AssistantText(id=message.id, text=message.content, calls=calls, finish_reason=data.get("finish_reason"))
    return ToolReply(
        id=message.id,
        call_id=data.get("call_id", ""),
        tool=data.get("tool", ""),
        server=data.get("server", ""),
        ok=bool(data.get("ok")),
        text=data.get("model_text", message.content),
        late=bool(data.get("task_result")),
    )


@dataclass(slots=True)
class Prepared:
    """One conversation as a turn needs it. `messages` only grows; a turn gets a copy of `history`."""

    id: str
    created_at: datetime
    data_version: int
    messages: list[Message]  # every branch, in the order written
    leaf_id: str | None = None
    path: list[Message] = field(default_factory=list)  # the active branch, root first
    history: list[HistoryRecord] = field(default_factory=list)  # its records
    app_context: list[tuple[str, str]] = field(default_factory=list)
    chars: int = 0  # the stored text of every branch
    by_id: dict[str, Message] = field(default_factory=dict)
    records: dict[str, HistoryRecord] = field(default_factory=dict)

    @property
    def last_seq(self) -> int:
        return self.messages[-1].seq if self.messages else 0

    def add(self, new: list[Message]) -> None:
        self.messages.extend(new)
        self.by_id.update((m.id, m) for m in new)
        self.chars += sum(len(m.content) for m in new)

    def follow(self, leaf_id: str | None, held_seq: int) -> None:
        """Make `leaf_id` the active branch: grown by the new messages when it runs through the
        leaf held, else walked again."""
        if leaf_id == self.leaf_id:
            return
        chain: list[Message] = []
        current = self.by_id.get(leaf_id) if leaf_id else None
        while current is not None and current.seq > held_seq and len(chain) <= len(self.messages):  # (a cycle)
            chain.append(current)
            current = self.by_id.get(current.parent_id) if current.parent_id else None
        through_held = (current.id == self.leaf_id) if current is not None else self.leaf_id is None
        if chain and through_held and leaf_id in self.by_id:
            chain.reverse()
            self.path.extend(chain)
            self.history.extend(self._record(m) for m in chain)
            self.app_context.extend(app_contexts(chain))
        else:
            self.path = active_path(self.messages, leaf_id)
            self.history = [self._record(m) for m in self.path]
            self.app_context = app_contexts(self.path)
        self.leaf_id = leaf_id

    def _record(self, message: Message) -> HistoryRecord:
        record = self.records.get(message.id)
        if record is None:
            record = self.records[message.id] = record_of(message)
        return record


class PreparedContexts:
    """The prepared contexts of this process's recent conversations (see the module docstring)."""

    def __init__(self, most: int = 128, most_chars: int = 64_000_000) -> None:
        self._kept: OrderedDict[str, Prepared] = OrderedDict()
        self._most, self._most_chars = most, most_chars

    def after(self, *ids: str) -> dict[str, int]:
        """Per id held, the highest seq held: what `ConversationStore.load(after=...)` takes."""
        return {i: self._kept[i].last_seq for i in ids if i in self._kept}

    def prepare(self, loaded: StoredConversation, held_seq: int) -> Prepared | None:
        """The conversation as `loaded` says it is now. `held_seq`: what the load read after (0:
        it read every message). None when what is held cannot be brought up to date from the
        messages read: read the conversation whole and call again with 0."""
        row = loaded.conversation
        prepared = self._kept.pop(row.id, None)
        if held_seq:
            if (
                prepared is None
                or prepared.last_seq != held_seq
                or prepared.created_at != row.created_at
                or prepared.data_version != row.data_version
                or len(prepared.messages) + len(loaded.messages) != row.message_count
            ):
                return None
            prepared.add(loaded.messages)
            prepared.follow(row.leaf_id, held_seq)
        else:
            prepared = Prepared(row.id, row.created_at, row.data_version, [])
            prepared.add(loaded.messages)
            prepared.follow(row.leaf_id, 0)
        self._kept[row.id] = prepared
        while len(self._kept) > self._most or (
            len(self._kept) > 1 and sum(p.chars for p in self._kept.values()) > self._most_chars
        ):
            self._kept.popitem(last=False)
        return prepared

    def clear(self) -> None:
        self._kept.clear()
