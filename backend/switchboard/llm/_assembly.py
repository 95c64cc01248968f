"""What both streaming paths share: joining streamed tool-call fragments, and
the one `Completed` that ends a call.

litellm's chunks are objects and the direct path's are plain dicts; each path
reads its own shape and hands the plain values to these helpers, so both end
with the same `Completed` for the same stream.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from switchboard.llm.types import Completed, ToolCallRequest, Usage

__all__ = ["ToolCallAssembler", "completed", "usage_from"]

logger = logging.getLogger("switchboard.llm")


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class ToolCallAssembler:
    """Joins streamed tool-call fragments: the first fragment of a call carries its
    id and name, later ones only its index and a piece of the arguments."""

    def __init__(self) -> None:
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}

    def add(self, index: int | None, call_id: str, name: str, arguments: str) -> None:
        partial = self._by_index.get(index) if index is not None else (self._calls[-1] if self._calls else None)
        if partial is not None and call_id and partial.id and call_id != partial.id:
            partial = None  # a provider that reuses index 0 for every (complete) call
        if partial is None or (index is None and call_id and partial.id):
            partial = _PartialCall()
            self._calls.append(partial)
            if index is not None:
                self._by_index[index] = partial
        partial.id = partial.id or call_id
        partial.name = partial.name or name
        partial.arguments += arguments

    def calls(self) -> list[ToolCallRequest]:
        requests = []
        for partial in self._calls:
            if not partial.name:
                logger.warning("dropped a streamed tool call without a name (id %r)", partial.id)
                continue
            call_id = partial.id or f"call_{uuid.uuid4().hex[:24]}"
            requests.append(ToolCallRequest(id=call_id, name=partial.name, arguments=partial.arguments or "{}"))
        return requests


def completed(assembler: ToolCallAssembler, finish_reason: str | None, usage: Usage | None) -> Completed:
    calls = assembler.calls()
    if calls and finish_reason in (None, "stop"):
        finish_reason = "tool_calls"  # some providers say "stop" after tool calls
    return Completed(finish_reason=finish_reason or "stop", tool_calls=calls, usage=usage)


def usage_from(prompt: int | None, completion: int | None, total: int | None) -> Usage | None:
    prompt, completion = prompt or 0, completion or 0
    total = total or prompt + completion
    return Usage(prompt, completion, total) if total else None  # all zero: the provider did not say
