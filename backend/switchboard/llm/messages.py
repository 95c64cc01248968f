"""History records to the OpenAI chat format that litellm (and every
OpenAI-compatible provider) takes.  The only place that knows that format."""

from __future__ import annotations

import json
import operator
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from switchboard.history import AssistantText, HistoryRecord, ToolReply, UserText

__all__ = ["OpenAIMessages", "PreparedMessages", "messages_json", "to_openai"]

CANCELLED_NOTE = "[cancelled by the user]"
LATE_NOTE = "The background task has finished:"


def to_openai(system: str, history: Sequence[HistoryRecord | dict[str, Any]]) -> list[dict[str, Any]]:
    """The system prompt and the records as OpenAI messages (dicts pass through:
    e.g. the messages of an MCP sampling request)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    _convert(history, messages)
    return messages


def _encoded(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


class OpenAIMessages(list[dict[str, Any]]):
    """Messages made by `PreparedMessages`, each one's JSON made once with it (`messages_json`)."""

    __slots__ = ("_made", "_parts")

    def __init__(self, messages: list[dict[str, Any]], parts: list[str]) -> None:
        super().__init__(messages)
        self._made, self._parts = messages, parts


def messages_json(messages: list[dict[str, Any]]) -> str:
    """`json.dumps(messages, ensure_ascii=False)`; for `OpenAIMessages` still as they were made, the
    kept JSON of each message joined (a long conversation's request then encodes only what is new)."""
    if isinstance(messages, OpenAIMessages):
        made, parts = messages._made, messages._parts
        if len(messages) == len(made) == len(parts) and all(map(operator.is_, messages, made)):
            return f"[{', '.join(parts)}]"
    return json.dumps(messages, ensure_ascii=False)


class PreparedMessages:
    """`to_openai` for a conversation's next call: the messages of the longest start of the
    history that a recent call had too (the same record objects, frozen, in the same order) are
    taken as they were, and only the records after it are converted. A conversation's calls then
    convert only what is new. Keyed by the first record's id; a history with a dict in what is new
    (not frozen) is converted whole and not kept. The messages are shared between calls, and so is
    each one's JSON (`messages_json`): whoever changes one must copy it first."""

    def __init__(self, most: int = 128) -> None:
        # per first record's id: the records of the last call, its messages, each message's JSON,
        # and per record the number of messages made up to and including it
        self._kept: OrderedDict[str, tuple[list[Any], list[dict[str, Any]], list[str], list[int]]] = OrderedDict()
        self._most = most

    def convert(self, system: str, history: Sequence[HistoryRecord | dict[str, Any]]) -> list[dict[str, Any]]:
        first = history[0] if history else None
        if first is None or isinstance(first, dict):
            return to_openai(system, history)
        records = list(history)
        kept = self._kept.pop(first.id, None)
        converted: list[dict[str, Any]] = []
        parts: list[str] = []
        ends: list[int] = []
        held = 0
        if kept is not None:
            held = _common_start(kept[0], records)
            ends = kept[3][:held]
            converted = kept[1][: ends[-1]] if ends else []
            parts = kept[2][: len(converted)]
        new = records[held:]
        if any(isinstance(r, dict) for r in new):
            return to_openai(system, history)
        for record in new:
            _convert((record,), converted)
            ends.append(len(converted))
        parts += map(_encoded, converted[len(parts) :])
        self._kept[first.id] = (records, converted, parts, ends)
        if len(self._kept) > self._most:
            self._kept.popitem(last=False)
        if not system:
            return OpenAIMessages(converted[:], parts)
        head = {"role": "system", "content": system}
        return OpenAIMessages([head, *converted], [_encoded(head), *parts])


def _common_start(a: list[Any], b: list[Any]) -> int:
    """How many items `a` and `b` start with that are the same objects (in C, by halves)."""
    n = min(len(a), len(b))
    if all(map(operator.is_, a[:n], b[:n])):
        return n
    same, differs = 0, n  # a[:same] is b[:same]; a[:differs] is not
    while differs - same > 1:
        middle = (same + differs) // 2
        if all(map(operator.is_, a[same:middle], b[same:middle])):
            same = middle
        else:
            differs = middle
    return same


def _convert(history: Sequence[HistoryRecord | dict[str, Any]], messages: list[dict[str, Any]]) -> None:
    for record in history:
        if isinstance(record, UserText):
            messages.append({"role": "user", "content": record.model_text})
        elif isinstance(record, AssistantText):
            text = record.text
            if record.finish_reason == "cancelled":
                text = f"{text}\n\n{CANCELLED_NOTE}" if text.strip() else CANCELLED_NOTE
            if not text and not record.calls:
                continue  # an answer that produced nothing (e.g. an error before any text)
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if record.calls:
                message["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in record.calls
                ]
            messages.append(message)
        elif isinstance(record, ToolReply) and record.late:
            # The call was answered ("started as a task") in its own turn; a provider takes a tool
            # message only right after the call, so the finished task's result comes as a note.
            messages.append(
                {"role": "user", "content": f"[{LATE_NOTE} {record.tool} (call {record.call_id})]\n{record.text}"}
            )
        elif isinstance(record, ToolReply):
            messages.append({"role": "tool", "tool_call_id": record.call_id, "content": record.text})
        else:
            messages.append(record)
