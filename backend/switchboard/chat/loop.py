"""The tool-call loop: one async generator of events per turn.

Each round streams the model's answer; tool calls it asks for run
concurrently (bounded per server by the pool) and their results go back to
the model; after `round_limit` rounds one last call runs without tools.
Every record of the turn goes through the recorder (which stores it) before
the event announcing it is yielded.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..access import Access
from ..artifacts import ArtifactStore, StoredFile
from ..config.loader import AppConfig
from ..config.models import ModelConfig
from ..errors import LLMUnavailable, SwitchboardError
from ..history import AssistantText, CallRecord, HistoryRecord, ToolReply, UserText
from ..llm.types import Completed, LLMEvent, LLMStream, Notice, TextDelta, ToolCallRequest, Usage
from ..tools import ServerPool, ToolInfo
from .attachments import attach
from .calls import CallRunner, ExecutedCall
from .app_context import app_context_text
from .context import fitting_context
from .events import (AppEvent, ApprovalRequest, ChatMessage, ErrorEvent, MessageDone, NoticeEvent, RenderEvent,
                     ServerEvent, TokenEvent, ToolResultEvent, ToolStart)  # fmt: skip
from .gateway import Gateway, ToolTokenEstimates, gateway_wanted
from .skills import SkillShelf
from .growing import GrowingText
from .render import render_markdown
from .session import ChatSession, new_id
from .unfinished import StoppedBy, unfinished_text

__all__ = ["ChatEngine", "PreparedTurn", "Recorder", "TurnLimits", "TurnState"]

log = logging.getLogger("switchboard.chat")

_DONE = object()
PER_USER_LISTING_WAIT_S = 10.0  # a turn waits this long at most for a per-user session to list its tools


class ModelResolver(Protocol):
    def resolve(self, name: str | None, access: Access) -> ModelConfig: ...

    def note_outcome(self, name: str, failure: str | None) -> None: ...


class Recorder(Protocol):
    """Keeps a turn's records: appends them to the session's history and stores
    them (unless the conversation is incognito). Raises StoreError when it cannot."""

    async def record(self, session: ChatSession, record: HistoryRecord, data: dict[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class TurnLimits:
    round_limit: int = 10
    calls_per_round: int = 32
    calls_per_turn: int = 128
    answer_chars: int = 200_000  # an answer is cut (finish_reason "length") past this
    render_interval_s: float = 0.25  # live `render` events at most this often


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    model: ModelConfig
    user: UserText | None  # None: regenerate the answer to the last user message
    user_data: dict[str, Any]


@dataclass
class TurnState:
    """What a turn has produced so far; read when it is cancelled."""

    message_id: str = field(default_factory=lambda: secrets.token_urlsafe(9))
    user_message_id: str | None = None
    answer: GrowingText = field(default_factory=lambda: GrowingText())  # the whole answer shown so far
    round_answer: GrowingText = field(default_factory=lambda: GrowingText())  # its part from the model call now streaming
    open_calls: list[ToolCallRequest] = field(default_factory=list)
    usage: Usage | None = None
    calls_run: int = 0
    completed: Completed | None = None  # the last event of the model call just made
    tools_of_calls: dict[str, tuple[str, str]] = field(default_factory=dict)  # call id -> (tool, server) it runs
    stopped_by: StoppedBy | None = None  # who ended the turn early, when it was stopped
    awaiting_approval: set[str] = field(default_factory=set)  # calls waiting for approval when it was stopped
    awaiting_answer: set[str] = field(default_factory=set)  # calls whose question to the user was open then
    error: ErrorEvent | None = None  # why the turn failed: stored with the answer, shown after a reload

    @property
    def text(self) -> str:
        return self.answer.text()

    @property
    def round_text(self) -> str:
        return self.round_answer.text()


class ChatEngine:
    def __init__(self, *, llm: LLMStream, models: ModelResolver, pool: ServerPool, calls: CallRunner,
                 files: ArtifactStore, config: AppConfig, limits: TurnLimits | None = None) -> None:  # fmt: skip
        self._llm = llm
        self._files = files
        self._models = models
        self._pool = pool
        self._tool_tokens = ToolTokenEstimates()
        self._calls = calls
        self._config = config
        self._limits = limits or TurnLimits()

    @property
    def config(self) -> AppConfig:
        return self._config

    def use_config(self, config: AppConfig, models: ModelResolver) -> None:
        """Switch to a reloaded configuration; turns already running finish on the old one."""
        self._config = config
        self._models = models
        self._calls.use_compliance(config.compliance)

    def access(self, session: ChatSession) -> Access:
        return session.access_with(self._config.compliance)

    def tools_for(self, session: ChatSession, selection: list[str] | None) -> list[ToolInfo]:
        visible = self._pool.registry.for_model(self.access(session))  # never the tools only apps may call
        if selection is None:
            return visible
        wanted = set(selection)
        return [tool for tool in visible if tool.qualified_name in wanted]

    def skills_for(self, session: ChatSession, selection: list[str] | None) -> SkillShelf:
        """The skills of the servers the user may use here; none when the chat asks for no tools."""
        access = self.access(session)
        entries = [] if selection == [] else [
            e for e in self._pool.skills(access.email) if self._pool.registry.server_admits(e.server, access)]  # fmt: skip
        return SkillShelf(self._pool, access.email, entries)

    async def prepare(self, session: ChatSession, request: ChatMessage) -> PreparedTurn:
        """Everything a turn needs before it may start (model, attachments); raises
        SwitchboardError when the request is refused, before anything is stored."""
        access = self.access(session)
        model = self._models.resolve(request.model, access)
        # The user's own sessions of per-user servers list the tools this turn may offer.
        mine = [name for name, config in self._pool.per_user_configs() if access.may_use_server(config)]
        if mine:
            await self._pool.open_for_user(mine, session.user.email, wait_s=PER_USER_LISTING_WAIT_S)
        if request.regenerate:
            return PreparedTurn(model, None, {})
        content = await attach(request, session, self._files, self._pool, self.access(session))
        user = UserText(id=new_id(), text=request.content, context=content.removeprefix(request.content))
        data = {"files": [_file_ref(f) for f in session.turn_files], "resources": [r.model_dump() for r in request.resources]}
        return PreparedTurn(model, user, data)

    def tool_tokens(self, tools: Sequence[ToolInfo]) -> int:
        """The estimated tokens of these tools' definitions (what `auto` exposure compares)."""
        return self._tool_tokens.tokens(self._pool.registry.version, tools)

    async def run_turn(self, session: ChatSession, request: ChatMessage, state: TurnState, recorder: Recorder,
                       prepared: PreparedTurn | None = None) -> AsyncIterator[ServerEvent]:  # fmt: skip
        try:
            prepared = prepared or await self.prepare(session, request)
            model = prepared.model
            if prepared.user is None:
                state.user_message_id = session.leaf_id
            else:
                state.user_message_id = prepared.user.id
                await recorder.record(session, prepared.user, prepared.user_data)
        except SwitchboardError as exc:
            yield ErrorEvent(code=exc.code, message=exc.message, action=exc.action)
            return
        session.model = model.name
        tools = self.tools_for(session, request.tools)
        offered = {tool.qualified_name for tool in tools}
        tool_tokens = self.tool_tokens(tools)
        wanted = gateway_wanted(model, self._config.llm, request.tool_exposure, tool_tokens)
        gateway = Gateway(self._pool.registry, tools) if wanted else None
        schemas = None if wanted else [tool.openai_schema() for tool in tools] or None
        skills = self.skills_for(session, request.tools)

        finish = "stop"
        for round_no in range(self._limits.round_limit + 1):
            last_round = round_no == self._limits.round_limit
            state.completed = None
            try:
                offer = gateway.schemas() if gateway is not None else schemas
                if skills:
                    offer = [*(offer or []), *skills.schemas()]
                async for event in self._stream_round(model, session, None if last_round else offer, state):
                    yield event
            except SwitchboardError as exc:
                yield _failed(state, exc)
                finish = "error"
                break
            completed, round_text = state.completed, state.round_text
            if completed is not None and completed.usage is not None:
                state.usage = _add_usage(state.usage, completed.usage)
            asked = completed.tool_calls if completed is not None and not last_round else []
            if not asked:
                reason = completed.finish_reason if completed is not None else "stop"
                finish = "length" if reason == "length" else ("round_limit" if last_round else "stop")
                break
            # The host names every call itself: a model cannot give two calls one id.
            calls = [ToolCallRequest(id=f"call_{secrets.token_urlsafe(9)}", name=c.name, arguments=c.arguments)
                     for c in asked]  # fmt: skip
            room = min(self._limits.calls_per_round, self._limits.calls_per_turn - state.calls_run)
            dropped = max(len(calls) - max(room, 0), 0)
            calls = calls[: max(room, 0)]
            state.calls_run += len(calls)
            try:
                await recorder.record(session, AssistantText(
                    id=new_id(), text=round_text, calls=tuple(CallRecord(c.id, c.name, c.arguments) for c in calls)),
                    {"turn": state.message_id})  # fmt: skip
            except SwitchboardError as exc:
                yield _failed(state, exc)
                finish = "error"
                break
            state.round_answer = GrowingText()
            if dropped:
                why = (f"The model asked for {len(asked):,} tool calls in one reply; the host runs at most "
                       f"{self._limits.calls_per_round} per reply and {self._limits.calls_per_turn} per answer, "
                       f"so {dropped:,} were not run.")  # fmt: skip
                yield NoticeEvent(code="tool_calls_limited", message=why)
            if not calls:
                finish = "round_limit"
                break
            if state.answer and not state.answer.endswith("\n"):
                state.answer.add("\n\n")
            state.open_calls = list(calls)
            try:
                async for event in self._run_calls(calls, session, offered, model, recorder, state,
                                                   dropped_note=why if dropped else "", gateway=gateway,
                                                   skills=skills):  # fmt: skip
                    yield event
            except SwitchboardError as exc:
                yield _failed(state, exc)
                finish = "error"
                break
        async for event in self.finish(session, state, finish, recorder):
            yield event

    async def _stream_round(self, model: ModelConfig, session: ChatSession, tools: list[dict[str, Any]] | None,
                            state: TurnState) -> AsyncIterator[ServerEvent]:  # fmt: skip
        """One model call: tokens (cut at the answer limit), notices and now and then a live
        render; its last event goes to `state.completed`."""
        state.round_answer = GrowingText()
        try:
            async with aclosing(self._model_round(model, session, tools, state)) as events:
                async for event in events:
                    yield event
        except LLMUnavailable as exc:  # not usable as configured: never picked as the default meanwhile
            self._models.note_outcome(model.name, exc.message)
            raise
        if state.completed is not None:
            self._models.note_outcome(model.name, None)

    async def _model_round(self, model: ModelConfig, session: ChatSession, tools: list[dict[str, Any]] | None,
                           state: TurnState) -> AsyncIterator[ServerEvent]:  # fmt: skip
        rendered_at, rendered_len = time.monotonic(), 0
        system = self._config.system_prompt.strip() + app_context_text(session.app_context)
        stream = fitting_context(self._llm, model, system, session, tools)
        async with aclosing(stream) as events:  # closed (the provider's stream too) when cut short
            async for event in events:
                if isinstance(event, Notice):
                    yield NoticeEvent(code=event.code, message=event.message)
                    continue
                if not isinstance(event, TextDelta):
                    state.completed = event
                    continue
                room = max(self._limits.answer_chars - len(state.answer), 0)
                text = event.text if len(event.text) <= room else event.text[:room]
                state.round_answer.add(text)
                state.answer.add(text)
                if text:
                    yield TokenEvent(text=text)
                if len(state.answer) >= self._limits.answer_chars:
                    yield NoticeEvent(code="answer_cut", message=f"The answer reached the limit of "
                                      f"{self._limits.answer_chars:,} characters and was cut there.")  # fmt: skip
                    state.completed = Completed(finish_reason="length")
                    return
                # Re-rendering the whole answer costs time in its length: render only when it has
                # grown by a quarter (linear in all), and off the event loop.
                now = time.monotonic()
                if now - rendered_at >= self._limits.render_interval_s and len(state.answer) >= rendered_len * 1.25 + 64:
                    rendered_at, rendered_len = now, len(state.answer)
                    yield RenderEvent(message_id=state.message_id, html=await asyncio.to_thread(render_markdown, state.text))

    async def finish(self, session: ChatSession, state: TurnState, finish: str,
                     recorder: Recorder) -> AsyncIterator[ServerEvent]:  # fmt: skip
        """Close the turn: answer every open call, store the answer, then announce it."""
        restarted = state.stopped_by == "restart"
        if restarted:
            finish = "error"
            state.error = ErrorEvent(code="internal", message="The server restarted while this answer was being written.",
                                     action="Ask again.")  # fmt: skip
            yield state.error
        for call in state.open_calls:
            # A gateway call names the tool it runs (once known), not the gateway.
            tool, server = state.tools_of_calls.get(call.id, (call.name, ""))
            text = unfinished_text(state.stopped_by if finish in ("cancelled", "error") else None,
                                   call.id in state.awaiting_approval, call.id in state.awaiting_answer)  # fmt: skip
            reply = ToolReply(id=new_id(), call_id=call.id, tool=tool, server=server, ok=False, text=text)
            try:
                await recorder.record(session, reply, {"turn": state.message_id, "content": reply.text})
            except SwitchboardError:
                break
            if restarted:  # a page still attached hears it; a user's Stop is shown by the page itself
                yield ToolResultEvent(call_id=call.id, tool=tool, server=server, ok=False, content=text)
        state.open_calls = []
        answer = AssistantText(id=state.message_id, text=state.round_text, finish_reason=finish)
        usage = _usage_dict(state.usage)
        error = state.error.model_dump(exclude={"type"}, exclude_none=True) if state.error and finish == "error" else None
        try:
            await recorder.record(session, answer, {"turn": state.message_id, "usage": usage, "error": error})
        except SwitchboardError as exc:
            yield ErrorEvent(code=exc.code, message=exc.message, action=exc.action)
            finish = "error"
        html = await asyncio.to_thread(render_markdown, state.text)
        yield MessageDone(message_id=state.message_id, finish_reason=finish, usage=usage, html=html,  # type: ignore[arg-type]
                          conversation_id=session.conversation_id, user_message_id=state.user_message_id)  # fmt: skip

    async def _run_calls(self, calls: list[ToolCallRequest], session: ChatSession, offered: set[str],
                         model: ModelConfig, recorder: Recorder, state: TurnState,
                         dropped_note: str, gateway: Gateway | None = None,
                         skills: SkillShelf | None = None) -> AsyncIterator[ServerEvent]:  # fmt: skip
        """Run the calls concurrently, yielding their events as they happen; each
        result is recorded before its tool_result goes out."""
        queue: asyncio.Queue[Any] = asyncio.Queue()

        async def emit(event: ServerEvent) -> None:
            await queue.put(event)

        async def sample(messages: list[dict[str, Any]], system: str | None, max_tokens: int) -> str:
            text = ""
            async for ev in self._llm.stream(model, messages, None, system=system or ""):
                if isinstance(ev, TextDelta):
                    text += ev.text
            return text

        async def direct(call: ToolCallRequest) -> ExecutedCall:
            return await self._calls.run(call, session=session, offered=offered, emit=emit, sample=sample)

        async def one(call: ToolCallRequest) -> None:
            try:
                if gateway is not None and gateway.handles(call.name):
                    executed = await gateway.run(call, emit, direct)
                elif skills and skills.handles(call.name):
                    executed = await skills.run(call, emit)
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
                    await recorder.record(session, _reply_of(item, dropped_note if last else ""), _tool_data(item, state))
                    state.open_calls = [c for c in state.open_calls if c.id != item.request.id]
                    yield item.event
                    if item.app_uri is not None and session.stored:  # an app mounts from the store
                        yield AppEvent(call_id=item.event.call_id, server=item.event.server, tool=item.event.tool,
                                       resource_uri=item.app_uri)  # fmt: skip
                else:
                    if isinstance(item, ToolStart | ApprovalRequest):
                        state.tools_of_calls[item.call_id] = (item.tool, item.server)
                    yield item
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _failed(state: TurnState, exc: SwitchboardError) -> ErrorEvent:
    state.error = ErrorEvent(code=exc.code, message=exc.message, action=exc.action)
    return state.error


def _file_ref(stored: StoredFile) -> dict[str, Any]:
    return {"id": stored.id, "name": stored.name, "mime": stored.mime, "size": stored.size}


def _reply_of(executed: ExecutedCall, note: str) -> ToolReply:
    event = executed.event
    text = executed.model_text + (f"\n[{note}]" if note else "")
    return ToolReply(id=new_id(), call_id=event.call_id, tool=event.tool, server=event.server, ok=event.ok, text=text)


def _tool_data(executed: ExecutedCall, state: TurnState) -> dict[str, Any]:
    event = executed.event
    data = event.model_dump(include={"results", "display", "duration_ms", "approval"}, exclude_none=True)
    data["artifacts"] = [a.model_dump() for a in event.artifacts]
    data["content"] = event.content
    data["arguments"] = executed.arguments
    data["turn"] = state.message_id
    if executed.app_uri is not None:  # enough to mount the app again after a reload or restart
        data["app"] = {"resource_uri": executed.app_uri, "digest": executed.app_digest}
        data["mcp_result"] = executed.mcp_result
    return data


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
