"""The tool-call loop: one async generator of events per turn.

Each round streams the model's answer; tool calls it asks for run
concurrently (chat/tool_round.py) and their results go back to the model;
after `round_limit` rounds one last call runs without tools. Every record of
the turn is kept by the recorder, which stores them once per round: an event
that announces a message (`tool_result`, `message_done`) goes out only after
the commit that stores it (chat/recording.py). The turn's end (open calls
answered, the answer stored, `message_done`) is chat/closing.py.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any, Protocol

from ..config.loader import AppConfig
from ..config.models import ModelConfig
from ..errors import LLMUnavailable, SwitchboardError
from ..files.artifacts import ArtifactStore, StoredFile
from ..history import AssistantText, CallRecord, UserText
from ..identity.access import Access
from ..llm.types import Completed, LLMStream, Notice, TextDelta, ToolCallRequest, Usage
from ..policy import Hooks
from ..store.message_data import FileRef, UserData
from ..tools import ServerPool, ToolInfo
from .apps.context import app_context_text
from .attachments import attach
from .calls.runner import CallRunner
from .closing import close_turn
from .context import fitting_context
from .conversation_state import new_id
from .events import (
    ChatMessage,
    ConversationEvent,
    ErrorEvent,
    NoticeEvent,
    RenderEvent,
    ServerEvent,
    TokenEvent,
)
from .gateway import Gateway, ToolTokenEstimates, gateway_wanted
from .growing import GrowingText
from .policy_points import refused, turn_facts
from .skills import SKILL_TOOLS, SkillShelf
from .tool_round import Recorder, run_calls
from .turn_state import Announcement, PreparedTurn, TurnLimits, TurnState, retrieved
from .views.live_render import LiveRender

__all__ = ["CALL_RECORD_DELAY_S", "ChatEngine", "PreparedTurn", "Recorder", "TurnLimits", "TurnState"]

CALL_RECORD_DELAY_S = 0.2  # a round's call message is stored once its calls have run this long

log = logging.getLogger("switchboard.chat")

PER_USER_LISTING_WAIT_S = 10.0  # a turn waits this long at most for a per-user session to list its tools


class ModelResolver(Protocol):
    def resolve(self, name: str | None, access: Access) -> ModelConfig: ...

    def note_outcome(self, name: str, failure: str | None) -> None: ...


class ChatEngine:
    def __init__(
        self,
        *,
        llm: LLMStream,
        models: ModelResolver,
        pool: ServerPool,
        calls: CallRunner,
        files: ArtifactStore,
        config: AppConfig,
        limits: TurnLimits | None = None,
    ) -> None:
        self._llm = llm
        self._files = files
        self._models = models
        self._pool = pool
        self._tool_tokens = ToolTokenEstimates()
        self._calls = calls
        self._config = config
        self._limits = limits or TurnLimits()
        calls.hooks.use(config.hooks)

    @property
    def config(self) -> AppConfig:
        return self._config

    @property
    def hooks(self) -> Hooks:
        return self._calls.hooks

    def use_config(self, config: AppConfig, models: ModelResolver) -> None:
        """Switch to a reloaded configuration; turns already running finish on the old one."""
        self._config = config
        self._models = models
        self._calls.use_compliance(config.compliance)
        self._calls.hooks.use(config.hooks)

    def access(self, turn: TurnState) -> Access:
        return turn.access_with(self._config.compliance)

    def tools_for(self, turn: TurnState, selection: list[str] | None) -> list[ToolInfo]:
        visible = self._pool.registry.for_model(self.access(turn))  # never the tools only apps may call
        if selection is None:
            return visible
        wanted = set(selection)
        return [tool for tool in visible if tool.qualified_name in wanted]

    def skills_for(self, turn: TurnState, selection: list[str] | None) -> SkillShelf:
        """The skills of the servers the user may use here. A chat that selects tools gets those of the
        servers it selected a tool of (all of them when it selects a skill tool itself), none for `[]`."""
        access = self.access(turn)
        entries = [e for e in self._pool.skills(access.email) if self._pool.registry.server_admits(e.server, access)]
        if selection is not None and not set(selection) & set(SKILL_TOOLS):
            selected = {tool.server for tool in self.tools_for(turn, selection)}
            entries = [e for e in entries if e.server in selected]
        return SkillShelf(self._pool, access.email, entries, self._calls)

    async def prepare(self, turn: TurnState, request: ChatMessage) -> PreparedTurn:
        """Everything a turn needs before it may start (model, attachments); raises
        SwitchboardError when the request is refused, before anything is stored."""
        access = self.access(turn)
        model = self._models.resolve(request.model, access)
        turn.progress.model = model.name
        prompt = await self._turn_points(turn, None if request.regenerate else request.content)
        if prompt is not None:  # a hook changed the prompt: the model, the store and the title see the new one
            request = request.model_copy(update={"content": prompt})
        # The user's own sessions of per-user servers list the tools this turn may offer.
        mine = [name for name, config in self._pool.per_user_configs() if access.may_use_server(config)]
        if mine:
            await self._pool.open_for_user(mine, turn.user.email, wait_s=PER_USER_LISTING_WAIT_S)
        if request.regenerate:
            return PreparedTurn(model, None, {})
        content = await attach(request, turn, self._files, self._pool, access)
        user = UserText(id=new_id(), text=request.content, context=content.removeprefix(request.content))
        data: UserData = {
            "files": [_file_ref(f) for f in turn.progress.turn_files],
            "resources": [r.model_dump() for r in request.resources],
        }
        return PreparedTurn(model, user, data, prompt)

    async def _turn_points(self, turn: TurnState, prompt: str | None) -> str | None:
        """The hooks before a turn: session_start (a conversation's first turn) and prompt_submit.
        Raises Forbidden when one denies; returns the prompt a hook changed, else None."""
        hooks = self._calls.hooks
        if not turn.conversation.history:
            verdict = await hooks.run("session_start", turn_facts(turn))
            if verdict.denied is not None:
                raise refused(verdict.denied)
        if prompt is None:
            return None
        verdict = await hooks.run("prompt_submit", turn_facts(turn, prompt=prompt))
        if verdict.denied is not None:
            raise refused(verdict.denied)
        return verdict.prompt

    def tool_tokens(self, tools: Sequence[ToolInfo]) -> int:
        """The estimated tokens of these tools' definitions (what `auto` exposure compares)."""
        return self._tool_tokens.tokens(self._pool.registry.version, tools)

    async def run_turn(
        self, turn: TurnState, request: ChatMessage, recorder: Recorder, prepared: PreparedTurn | None = None
    ) -> AsyncGenerator[ServerEvent, None]:
        conversation = turn.conversation
        try:
            prepared = prepared or await self.prepare(turn, request)
            turn.progress.model = prepared.model.name
            if prepared.user is None:
                turn.progress.user_message_id = conversation.leaf_id
            else:
                turn.progress.user_message_id = prepared.user.id
                recorder.keep(turn, prepared.user, prepared.user_data)
        except SwitchboardError as exc:
            yield ErrorEvent.of(exc)
            return
        # The first commit (a new conversation with its question) runs while the first model call
        # is sent: the `conversation` event, and every event after it, waits for it.
        first_commit = asyncio.ensure_future(recorder.begin(turn, prepared.prompt or request.content))
        first_commit.add_done_callback(retrieved)
        writes = turn.writes
        writes.announcement = Announcement(
            first_commit, lambda created: _conversation_events(turn, created), first=True
        )
        model = prepared.model
        tools = self.tools_for(turn, request.tools)
        offered = {tool.qualified_name for tool in tools}
        wanted = gateway_wanted(model, self._config.llm, request.tool_exposure, self.tool_tokens(tools))
        gateway = Gateway(self._pool.registry, tools) if wanted else None
        schemas = None if wanted else [tool.openai_schema() for tool in tools] or None
        skills = self.skills_for(turn, request.tools)

        finish = "stop"
        for round_no in range(self._limits.round_limit + 1):
            last_round = round_no == self._limits.round_limit
            turn.progress.completed = None
            try:
                offer = gateway.schemas() if gateway is not None else schemas
                if skills:
                    offer = [*(offer or []), *skills.schemas()]
                async for event in self._stream_round(model, turn, None if last_round else offer):
                    for waiting in await writes.announced():
                        yield waiting
                    yield event
            except SwitchboardError as exc:
                failure: SwitchboardError | None = exc
            else:
                failure = None
            if writes.announcement is not None:  # the round ended without an event, or failed
                first = writes.announcement.first
                try:
                    for waiting in await writes.announced():
                        yield waiting
                except SwitchboardError as exc:
                    if first:  # the question could not be stored: nothing goes on
                        yield ErrorEvent.of(exc)
                        return
                    failure = failure or exc
            if failure is not None:
                yield _failed(turn, failure)
                finish = "error"
                break
            completed, round_text = turn.progress.completed, turn.round_text
            if completed is not None and completed.usage is not None:
                turn.progress.usage = _add_usage(turn.progress.usage, completed.usage)
            asked: list[ToolCallRequest] = completed.tool_calls if completed is not None and not last_round else []
            if not asked:
                reason = completed.finish_reason if completed is not None else "stop"
                finish = "length" if reason == "length" else ("round_limit" if last_round else "stop")
                break
            # The host names every call itself: a model cannot give two calls one id.
            calls = [
                ToolCallRequest(id=f"call_{secrets.token_urlsafe(9)}", name=c.name, arguments=c.arguments)
                for c in asked
            ]
            room = min(self._limits.calls_per_round, self._limits.calls_per_turn - turn.progress.calls_run)
            dropped = max(len(calls) - max(room, 0), 0)
            calls = calls[: max(room, 0)]
            turn.progress.calls_run += len(calls)
            recorder.keep(
                turn,
                AssistantText(
                    id=new_id(), text=round_text, calls=tuple(CallRecord(c.id, c.name, c.arguments) for c in calls)
                ),
                {"turn": turn.message_id},
            )
            # Written while the calls run, unless they end first (then with their results, in one
            # transaction): a process that dies during a longer call leaves a conversation saying which ran.
            recorder.commit_later(turn, CALL_RECORD_DELAY_S)
            turn.progress.round_answer = GrowingText()
            why = ""
            if dropped:
                why = (
                    f"The model asked for {len(asked):,} tool calls in one reply; the host runs at most "
                    f"{self._limits.calls_per_round} per reply and {self._limits.calls_per_turn} per answer, "
                    f"so {dropped:,} were not run."
                )
                yield NoticeEvent(code="tool_calls_limited", message=why)
            if not calls:
                finish = "round_limit"
                break
            if turn.progress.answer and not turn.progress.answer.endswith("\n"):
                turn.progress.answer.add("\n\n")
            turn.progress.open_calls = list(calls)
            try:
                async for item in run_calls(
                    calls,
                    turn,
                    runner=self._calls,
                    llm=self._llm,
                    offered=offered,
                    model=model,
                    recorder=recorder,
                    dropped_note=why,
                    gateway=gateway,
                    skills=skills,
                ):
                    if isinstance(item, Announcement):  # sent before the next model call's first event
                        writes.announcement = item
                    else:
                        yield item
            except SwitchboardError as exc:
                yield _failed(turn, exc)
                finish = "error"
                break
        async for event in self.finish(turn, finish, recorder):
            yield event

    async def _stream_round(
        self, model: ModelConfig, turn: TurnState, tools: list[dict[str, Any]] | None
    ) -> AsyncGenerator[ServerEvent, None]:
        """One model call: tokens (cut at the answer limit), notices and now and then a live
        render; its last event goes to `turn.progress.completed`."""
        turn.progress.round_answer = GrowingText()
        live = LiveRender()
        verdict = await self._calls.hooks.run("pre_model", turn_facts(turn))
        if verdict.denied is not None:
            raise refused(verdict.denied)
        try:
            rendered_at = time.monotonic()
            system = self._config.system_prompt.strip() + app_context_text(turn.conversation.app_context)
            stream = fitting_context(self._llm, model, system, turn, tools)
            async with aclosing(stream) as events:  # closed (the provider's stream too) when cut short
                async for event in events:
                    if isinstance(event, Notice):
                        yield NoticeEvent(code=event.code, message=event.message)
                        continue
                    if not isinstance(event, TextDelta):
                        turn.progress.completed = event
                        continue
                    room = max(self._limits.answer_chars - len(turn.progress.answer), 0)
                    text = event.text if len(event.text) <= room else event.text[:room]
                    turn.progress.round_answer.add(text)
                    turn.progress.answer.add(text)
                    if text:
                        yield TokenEvent(text=text)
                    if len(turn.progress.answer) >= self._limits.answer_chars:
                        yield NoticeEvent(
                            code="answer_cut",
                            message=f"The answer reached the limit of "
                            f"{self._limits.answer_chars:,} characters and was cut there.",
                        )
                        turn.progress.completed = Completed(finish_reason="length")
                        break
                    # Only the round's unfinished last block is rendered again (`LiveRender`).
                    now = time.monotonic()
                    if live.due(
                        len(turn.progress.round_answer), waited=now - rendered_at >= self._limits.render_interval_s
                    ):
                        rendered_at = now
                        yield await _live_render(turn, live)
            # The round's text shown whole before what follows: a tool card, or the final HTML (which
            # then changes nothing on the page). A short answer's final HTML is enough.
            asked = turn.progress.completed is not None and bool(turn.progress.completed.tool_calls)
            if live.behind(len(turn.progress.round_answer)) and (live.started or asked):
                yield await _live_render(turn, live)
        except LLMUnavailable as exc:  # not usable as configured: never picked as the default meanwhile
            self._models.note_outcome(model.name, exc.message)
            raise
        if turn.progress.completed is not None:
            self._models.note_outcome(model.name, None)

    async def finish(self, turn: TurnState, finish: str, recorder: Recorder) -> AsyncGenerator[ServerEvent, None]:
        """Close the turn: answer every open call, store the answer, then announce it; then the
        turn_end hooks run (not waited for: the answer is out)."""
        async for event in close_turn(turn, finish, recorder):
            yield event
        self._calls.hooks.observe("turn_end", turn_facts(turn, finish_reason=finish))


def _conversation_events(turn: TurnState, created: bool) -> list[ServerEvent]:
    """The `conversation` event, when the first commit created the conversation (or the turn
    moved to a new one)."""
    if not created and not turn.moved:
        return []
    conversation = turn.conversation
    return [
        ConversationEvent(
            conversation_id=conversation.id, title=conversation.title or "New conversation", reason=turn.moved
        )
    ]


async def _live_render(turn: TurnState, live: LiveRender) -> RenderEvent:
    settled, last = await live.render(turn.progress.round_answer.since(live.settled))
    if len(turn.progress.round_answer) == len(
        turn.progress.answer
    ):  # the answer's first text: its final HTML reuses these
        turn.progress.live = live
    return RenderEvent(message_id=turn.message_id, settled=settled, open=last)


def _failed(turn: TurnState, exc: SwitchboardError) -> ErrorEvent:
    turn.progress.error = ErrorEvent.of(exc)
    return turn.progress.error


def _file_ref(stored: StoredFile) -> FileRef:
    return {"id": stored.id, "name": stored.name, "mime": stored.mime, "size": stored.size}


def _add_usage(total: Usage | None, more: Usage) -> Usage:
    if total is None:
        return more
    return Usage(
        prompt_tokens=total.prompt_tokens + more.prompt_tokens,
        completion_tokens=total.completion_tokens + more.completion_tokens,
        total_tokens=total.total_tokens + more.total_tokens,
    )
