"""The tool calls of one round, run concurrently (bounded per server by the pool): their events
go out as they happen, and each result is committed to the store before its `tool_result`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from typing import Any, Protocol, overload

from ..config.models import ModelConfig
from ..history import AssistantText, ToolReply, UserText
from ..llm.types import LLMStream, TextDelta, ToolCallRequest
from ..store.message_data import AssistantData, ToolData, UserData
from .calls.runner import CallRunner, ExecutedCall
from .conversation_state import new_id
from .events import AppEvent, ApprovalRequest, ServerEvent, ToolStart
from .gateway import Gateway
from .skills import SkillShelf
from .turn_state import Announcement, TurnState, retrieved

__all__ = ["Recorder", "run_calls"]

_DONE = object()


class Recorder(Protocol):
    """Keeps a turn's records (in its conversation at once) and stores them once per round
    (chat/recording.py); `commit` raises StoreError when it cannot."""

    @overload
    def keep(self, turn: TurnState, record: UserText, data: UserData) -> None: ...
    @overload
    def keep(self, turn: TurnState, record: AssistantText, data: AssistantData) -> None: ...
    @overload
    def keep(self, turn: TurnState, record: ToolReply, data: ToolData) -> None: ...

    async def begin(self, turn: TurnState, first_text: str) -> bool: ...

    def commit_soon(self, turn: TurnState) -> None: ...

    def commit_later(self, turn: TurnState, delay_s: float) -> None: ...

    async def commit(self, turn: TurnState) -> None: ...


async def run_calls(
    calls: list[ToolCallRequest],
    turn: TurnState,
    *,
    runner: CallRunner,
    llm: LLMStream,
    offered: set[str],
    model: ModelConfig,
    recorder: Recorder,
    dropped_note: str,
    gateway: Gateway | None = None,
    skills: SkillShelf | None = None,
) -> AsyncIterator[ServerEvent | Announcement]:
    """Run the calls concurrently, yielding their events as they happen; the round's last result
    comes as an `Announcement` (its events wait for the commit that stores it), for the loop to
    send before the next model call's first event."""
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def emit(event: ServerEvent) -> None:
        await queue.put(event)

    async def sample(messages: list[dict[str, Any]], system: str | None, max_tokens: int) -> str:
        text = ""
        async for ev in llm.stream(model, messages, None, system=system or ""):
            if isinstance(ev, TextDelta):
                text += ev.text
        return text

    async def direct(call: ToolCallRequest) -> ExecutedCall:
        return await runner.run(call, turn=turn, offered=offered, emit=emit, sample=sample)

    async def one(call: ToolCallRequest) -> None:
        try:
            if gateway is not None and gateway.handles(call.name):
                executed = await gateway.run(call, emit, direct)
            elif skills and skills.handles(call.name):
                executed = await skills.run(call, emit, turn)
            else:
                executed = await direct(call)
            await queue.put(executed)
        finally:
            await queue.put(_DONE)

    tasks = [asyncio.create_task(one(call), name=f"tool:{call.name}") for call in calls]
    remaining = len(tasks)
    try:
        while remaining:
            item = await queue.get()
            if item is _DONE:
                remaining -= 1
            elif isinstance(item, ExecutedCall):
                last = remaining == 1 and dropped_note
                recorder.keep(turn, _reply_of(item, dropped_note if last else ""), _tool_data(item, turn))
                turn.progress.open_calls = [c for c in turn.progress.open_calls if c.id != item.request.id]
                # The round so far (its call message too) is stored before the result goes out. The
                # round's last result is stored while the next model request is sent: the loop sends
                # it before that call's first event.
                commit = asyncio.ensure_future(recorder.commit(turn))
                commit.add_done_callback(retrieved)
                announcement = Announcement(commit, partial(_result_events, item, turn))
                if remaining > 1:
                    for event in await announcement.due():
                        yield event
                else:
                    yield announcement
            else:
                if isinstance(item, ToolStart | ApprovalRequest):
                    turn.progress.tools_of_calls[item.call_id] = (item.tool, item.server)
                yield item
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _result_events(executed: ExecutedCall, turn: TurnState, _stored: object) -> list[ServerEvent]:
    events: list[ServerEvent] = [executed.event]
    if executed.app_uri is not None and turn.conversation.stored:  # an app mounts from the store
        events.append(
            AppEvent(
                call_id=executed.event.call_id,
                server=executed.event.server,
                tool=executed.event.tool,
                resource_uri=executed.app_uri,
            )
        )
    return events


def _reply_of(executed: ExecutedCall, note: str) -> ToolReply:
    event = executed.event
    text = executed.model_text + (f"\n[{note}]" if note else "")
    return ToolReply(id=new_id(), call_id=event.call_id, tool=event.tool, server=event.server, ok=event.ok, text=text)


def _tool_data(executed: ExecutedCall, turn: TurnState) -> ToolData:
    event = executed.event
    data: ToolData = {}
    if event.results is not None:
        data["results"] = event.results
    if event.display is not None:
        data["display"] = event.display
    data["duration_ms"] = event.duration_ms
    if event.approval is not None:
        data["approval"] = event.approval
    data["artifacts"] = [a.model_dump() for a in event.artifacts]
    data["content"] = event.content
    data["arguments"] = executed.arguments
    data["turn"] = turn.message_id
    if executed.app_uri is not None:  # enough to mount the app again after a reload or restart
        data["app"] = {"resource_uri": executed.app_uri, "digest": executed.app_digest}
        data["mcp_result"] = executed.mcp_result
    return data
