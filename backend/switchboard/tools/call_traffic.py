"""Server-to-client traffic during tool calls: which call a log line, an
elicitation or a sampling request belongs to, and each call's idle clock
(time spent waiting for the user or the model on the server's behalf counts
as life, not as silence)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fastmcp.client.elicitation import ElicitResult

from ..errors import ToolError
from .models import CallSink

__all__ = ["Activity", "CallTraffic"]

log = logging.getLogger("switchboard.tools")

_current_sink: contextvars.ContextVar[CallSink | None] = contextvars.ContextVar("switchboard_call_sink", default=None)


@dataclass
class Activity:
    """When a call last showed signs of life."""

    last: float
    waiting: int = 0  # answers the user or the model are writing for the server right now


class CallTraffic:
    """The calls in flight on one connection, and the handlers the MCP client calls."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._activity: dict[CallSink, Activity] = {}

    @property
    def busy(self) -> bool:
        return bool(self._activity)

    @contextlib.contextmanager
    def tracking(self, sink: CallSink, started: float) -> Iterator[Activity]:
        """One call in flight: its traffic goes to `sink` while the block runs."""
        activity = self._activity[sink] = Activity(started)
        try:
            yield activity
        finally:
            self._activity.pop(sink, None)

    @contextlib.contextmanager
    def routed_to(self, sink: CallSink) -> Iterator[None]:
        """Tasks created in this block carry `sink` (requests they cause are routed to it)."""
        token = _current_sink.set(sink)
        try:
            yield
        finally:
            _current_sink.reset(token)

    def _sink(self) -> CallSink | None:
        """The call a server request belongs to. Over stdio (and some HTTP servers) a request of
        an older server names no call: it goes to the only call in flight, or, with several, to
        the first when they all have one owner (one user's turn); otherwise to none."""
        sink = _current_sink.get()
        if sink is None and self._activity:
            owners = {id(getattr(s, "owner", s)) for s in self._activity}
            if len(owners) == 1:
                sink = next(iter(self._activity))
        return sink

    @contextlib.contextmanager
    def _waiting_for_answer(self, sink: CallSink) -> Iterator[None]:
        """The call's idle clock stops while the user or the model answers for the server."""
        activity = self._activity.get(sink)
        if activity is None:
            yield
            return
        activity.waiting += 1
        try:
            yield
        finally:
            activity.waiting -= 1
            activity.last = asyncio.get_running_loop().time()

    async def on_log(self, message: Any) -> None:
        data = message.data if isinstance(message.data, str) else repr(message.data)
        log.info("server %s log [%s]: %s", self._server, message.level, data[:2000])
        sink = self._sink()
        if sink is not None:
            await sink.log(str(message.level), data)

    async def on_elicit(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        sink = self._sink()
        if sink is None:
            return ElicitResult(action="decline")
        schema = getattr(params, "requested_schema", None) or {}
        url = getattr(params, "url", None)
        if url:
            schema = {"type": "object", "properties": {}, "x-url": str(url)}
        with self._waiting_for_answer(sink):
            action, content = await sink.elicit(message, schema)
        if action == "accept":
            return ElicitResult(action="accept", content=content)
        return ElicitResult(action="decline" if action == "decline" else "cancel")

    async def on_sample(self, messages: list[Any], params: Any, context: Any) -> str:
        sink = self._sink()
        if sink is None:
            raise ToolError("sampling is only available during a tool call")
        plain = []
        for msg in messages:
            content = msg.content
            text = getattr(content, "text", None)
            plain.append({"role": msg.role, "content": text if text is not None else str(content)})
        with self._waiting_for_answer(sink):
            return await sink.sample(
                plain, getattr(params, "system_prompt", None), int(getattr(params, "max_tokens", 512))
            )
