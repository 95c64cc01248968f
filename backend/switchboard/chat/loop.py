"""The tool-call loop: one async generator of events per turn.

Each round streams the model's answer; tool calls it asks for run
concurrently (bounded per server by the pool) and their results go back to
the model; after `round_limit` rounds one last call runs without tools.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..artifacts import ArtifactStore
from ..config.loader import AppConfig
from ..config.models import ModelConfig
from ..errors import SwitchboardError
from ..llm.types import Completed, LLMEvent, Notice, TextDelta, ToolCallRequest, Usage
from ..tools import ServerPool, ToolInfo
from .attachments import attach
from .calls import CallRunner, ExecutedCall
from .context import fitting_context
from .events import ChatMessage, ErrorEvent, MessageDone, NoticeEvent, RenderEvent, ServerEvent, TokenEvent
from .render import render_markdown
from .session import ChatSession

__all__ = ["ChatEngine", "LLMStream", "TurnState"]

RENDER_INTERVAL_S = 0.25
_DONE = object()


class LLMStream(Protocol):
    def stream(self, model: ModelConfig, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
               ) -> AsyncIterator[LLMEvent]: ...  # fmt: skip


class ModelResolver(Protocol):
    def resolve(self, name: str | None, groups: set[str], compliance_level: str | None, compliance: Any) -> ModelConfig: ...


@dataclass
class TurnState:
    """What a turn has produced so far; read when it is cancelled."""

    message_id: str = field(default_factory=lambda: secrets.token_urlsafe(9))
    text: str = ""  # the whole answer shown so far
    round_text: str = ""  # the part of it from the model call now streaming
    open_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None


class ChatEngine:
    def __init__(self, *, llm: LLMStream, models: ModelResolver, pool: ServerPool, calls: CallRunner,
                 files: ArtifactStore, config: AppConfig, round_limit: int = 10) -> None:  # fmt: skip
        self._llm = llm
        self._files = files
        self._models = models
        self._pool = pool
        self._calls = calls
        self._config = config
        self._round_limit = round_limit

    def use_config(self, config: AppConfig, models: ModelResolver) -> None:
        """Switch to a reloaded configuration; turns already running finish on the old one."""
        self._config = config
        self._models = models
        self._calls.use_compliance(config.compliance)

    def tools_for(self, session: ChatSession, selection: list[str] | None) -> list[ToolInfo]:
        visible = self._pool.registry.visible(session.user.group_set, session.compliance_level, self._config.compliance)
        if selection is None:
            return visible
        wanted = set(selection)
        return [tool for tool in visible if tool.qualified_name in wanted]

    def _messages(self, session: ChatSession) -> list[dict[str, Any]]:
        system = self._config.system_prompt.strip()
        return ([{"role": "system", "content": system}] if system else []) + session.history

    async def run_turn(self, session: ChatSession, request: ChatMessage, state: TurnState) -> AsyncIterator[ServerEvent]:
        groups = session.user.group_set
        if request.compliance_level is not None:
            if request.compliance_level not in self._config.compliance.names:
                yield ErrorEvent(code="bad_request", message=f"unknown compliance level '{request.compliance_level}'",
                                 action=f"Use one of: {', '.join(self._config.compliance.names)}.")  # fmt: skip
                return
            session.compliance_level = request.compliance_level
        try:
            model = self._models.resolve(request.model, groups, session.compliance_level, self._config.compliance)
        except SwitchboardError as exc:
            yield ErrorEvent(code=exc.code, message=exc.message, action=exc.action)
            return
        try:
            content = await attach(request, session, self._files, self._pool, self._config.compliance)
        except SwitchboardError as exc:
            yield ErrorEvent(code=exc.code, message=exc.message, action=exc.action)
            return
        tools = self.tools_for(session, request.tools)
        offered = {tool.qualified_name for tool in tools}
        schemas = [tool.openai_schema() for tool in tools] or None
        session.history.append({"role": "user", "content": content})

        finish = "stop"
        for round_no in range(self._round_limit + 1):
            last_round = round_no == self._round_limit
            completed: Completed | None = None
            round_text = state.round_text = ""
            last_render = time.monotonic()
            try:
                tools_now = None if last_round else schemas
                async for event in fitting_context(self._llm, model, self._messages, session, tools_now):
                    if isinstance(event, TextDelta):
                        round_text += event.text
                        state.round_text = round_text
                        state.text += event.text
                        yield TokenEvent(text=event.text)
                        if time.monotonic() - last_render >= RENDER_INTERVAL_S:
                            last_render = time.monotonic()
                            yield RenderEvent(message_id=state.message_id, html=render_markdown(state.text))
                    elif isinstance(event, Notice):
                        yield NoticeEvent(code=event.code, message=event.message)
                    else:
                        completed = event
            except SwitchboardError as exc:
                if round_text:
                    session.history.append({"role": "assistant", "content": round_text})
                yield ErrorEvent(code=exc.code, message=exc.message, action=exc.action)
                finish = "error"
                break
            if completed is not None and completed.usage is not None:
                state.usage = _add_usage(state.usage, completed.usage)
            calls = completed.tool_calls if completed is not None and not last_round else []
            assistant: dict[str, Any] = {"role": "assistant", "content": round_text or None}
            if calls:
                assistant["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments or "{}"}}
                    for c in calls
                ]
            if round_text or calls:
                session.history.append(assistant)
            state.round_text = ""
            if not calls:
                reason = completed.finish_reason if completed is not None else "stop"
                finish = "length" if reason == "length" else ("round_limit" if last_round else "stop")
                break
            if state.text and not state.text.endswith("\n"):
                state.text += "\n\n"
            state.open_calls = list(calls)
            async for event in self._run_calls(calls, session, offered, model):
                if isinstance(event, ExecutedCall):
                    session.history.append({"role": "tool", "tool_call_id": event.request.id, "content": event.model_text})
                    state.open_calls = [c for c in state.open_calls if c.id != event.request.id]
                    yield event.event
                else:
                    yield event
        yield MessageDone(
            message_id=state.message_id,
            finish_reason=finish,  # type: ignore[arg-type]
            usage=_usage_dict(state.usage),
            html=render_markdown(state.text),
        )

    async def _run_calls(self, calls: list[ToolCallRequest], session: ChatSession, offered: set[str],
                         model: ModelConfig) -> AsyncIterator[ServerEvent | ExecutedCall]:  # fmt: skip
        """Run the calls concurrently, yielding their events as they happen."""
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def emit(event: ServerEvent) -> None:
            await queue.put(event)

        async def sample(messages: list[dict[str, Any]], system: str | None, max_tokens: int) -> str:
            prefix = [{"role": "system", "content": system}] if system else []
            text = ""
            async for ev in self._llm.stream(model, prefix + messages, None):
                if isinstance(ev, TextDelta):
                    text += ev.text
            return text

        async def one(call: ToolCallRequest) -> None:
            try:
                executed = await self._calls.run(call, session=session, offered=offered, emit=emit, sample=sample)
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
                else:
                    yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def close_cancelled(self, session: ChatSession, state: TurnState) -> MessageDone:
        """Keep what a cancelled turn produced, and leave the history valid."""
        for call in state.open_calls:
            session.history.append({"role": "tool", "tool_call_id": call.id, "content": "Cancelled by the user."})
        state.open_calls = []
        last = session.history[-1] if session.history else None
        partial = state.round_text.strip()
        if last is not None and last.get("role") in ("user", "tool"):
            session.history.append({"role": "assistant", "content": (partial + "\n\n" if partial else "") + "[cancelled by the user]"})
        return MessageDone(
            message_id=state.message_id,
            finish_reason="cancelled",
            usage=_usage_dict(state.usage),
            html=render_markdown(state.text),
        )


def _add_usage(total: Usage | None, more: Usage) -> Usage:
    if total is None:
        return more
    return Usage(
        prompt_tokens=total.prompt_tokens + more.prompt_tokens,
        completion_tokens=total.completion_tokens + more.completion_tokens,
        total_tokens=total.total_tokens + more.total_tokens,
    )


def _usage_dict(usage: Usage | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total_tokens}


