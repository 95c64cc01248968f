"""One tool call from the model (or an app): authorize, fill host-owned arguments, ask
for approval, run, hand a server's task to the poller.  A failed call is data (a tool_result
with ok false), never an exception.  What the call asks and says while it runs is in
call_questions.py; how its outcome is shaped for the page and the model in call_results.py."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ...audit.writer import Auditor
from ...config.models import ComplianceLevels, ServerConfig
from ...errors import SwitchboardError, ToolError, ToolQuarantined
from ...files.artifacts import ArtifactStore
from ...files.signing import UrlSigner
from ...llm.types import ToolCallRequest
from ...policy import HookRecord, Hooks
from ...telemetry import tool_call_done
from ...tools import ServerPool, ToolInfo, ToolOutcome
from ...tools.apps import AppResource
from ..events import ApprovalRequest, ToolResultEvent, ToolStart
from ..policy_points import ToolPolicy
from ..questions import ApprovalAnswer
from ..turn_state import TurnState
from .approvals import allowance_key, approval_reason, schema_problem
from .asks import Emit, Sampler, TurnSink, ask_approval
from .audit import audit_call, audit_cancelled
from .background import TaskAdopter, adopt_task
from .host_args import fill_host_arguments, parse_arguments
from .results import CallResults, bounded_for_app, frame_for_model, limit_text

# frame_for_model and limit_text live in call_results.py; named here too for the callers that import them from here
__all__ = ["CallRunner", "CallSettings", "ExecutedCall", "frame_for_model", "limit_text"]

log = logging.getLogger("switchboard.chat")


@dataclass(frozen=True, slots=True)
class CallSettings:
    max_tool_result_chars: int = 20_000
    max_result_event_chars: int = 50_000
    approval_timeout_s: float = 300.0
    elicitation_timeout_s: float = 600.0
    max_app_result_chars: int = 2_000_000  # an MCP result kept for an app (JSON); a larger one is cut to its text


@dataclass(slots=True)
class ExecutedCall:
    request: ToolCallRequest
    event: ToolResultEvent
    model_text: str  # what goes back to the model
    arguments: dict[str, Any] | None = None  # what the tool was called with
    approval: dict[str, Any] | None = None  # how the user let it run (ToolStart.approval), when asked
    ran: bool = False  # the tool was called (not refused, denied or stopped before it ran)
    mcp_result: dict[str, Any] | None = None  # the whole MCP result (app tools, and calls made by apps)
    app_uri: str | None = None  # an app tool whose app can be shown: its `ui://` resource
    app_digest: str | None = None  # ... and the digest of the app as it was when the call ran
    hooks: list[HookRecord] = field(default_factory=list)  # each policy hook's decision on this call
    decision: str = "error"  # for the audit log: "allow" (it ran), "deny" (refused or denied), "error"
    pin: str | None = None  # the tool's definition hash, when the tool was found


class CallRunner:
    def __init__(
        self,
        pool: ServerPool,
        artifacts: ArtifactStore,
        compliance: ComplianceLevels,
        settings: CallSettings,
        signer: UrlSigner | None = None,
        *,
        tasks: TaskAdopter | None = None,
        audit: Auditor | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self._pool = pool
        self._compliance = compliance
        self._settings = settings
        self._signer = signer
        self._results = CallResults(
            pool,
            artifacts,
            max_event_chars=settings.max_result_event_chars,
            max_model_chars=settings.max_tool_result_chars,
        )
        self.tasks = tasks  # the process's task poller (chat/tasks/poller.py); None: a server's task is refused
        self.hooks = hooks or Hooks()  # hooks.json (the engine hands it the configuration's)
        self.audit = audit  # the audit log (every call ends in one record)

    def use_compliance(self, compliance: ComplianceLevels) -> None:
        self._compliance = compliance

    def _failed(self, request: ToolCallRequest, tool: ToolInfo | None, message: str, started: float) -> ExecutedCall:
        name = tool.qualified_name if tool else request.name
        event = ToolResultEvent(
            call_id=request.id,
            tool=name,
            server=tool.server if tool else "",
            ok=False,
            content=message,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        executed = ExecutedCall(
            request, event, frame_for_model(name, False, message, self._settings.max_tool_result_chars)
        )
        executed.pin = tool.definition_hash if tool else None
        return executed

    async def run(
        self,
        request: ToolCallRequest,
        *,
        turn: TurnState,
        offered: set[str],
        emit: Emit,
        sample: Sampler | None = None,
        from_app: str | None = None,
    ) -> ExecutedCall:
        """Every call ends in a result, whatever goes wrong on the way. `from_app`: an MCP App
        (mounted for that call id) makes this call; it runs exactly as the model's would."""
        started = time.monotonic()
        records: list[HookRecord] = []
        try:
            executed = await self._run(request, turn, offered, emit, sample, started, from_app, records)
            executed.hooks = records
            if from_app is not None:
                executed.event = executed.event.model_copy(update={"from_app": from_app})
            tool_call_done(executed.event.server or "none", "ok" if executed.event.ok else "error")
        except asyncio.CancelledError:
            audit_cancelled(self.audit, request, turn, from_app, int((time.monotonic() - started) * 1000))
            raise
        except Exception as exc:
            log.error(
                "tool call failed inside the host",
                exc_info=exc,
                extra={"event": "tool_call_crashed", "tool": request.name, "user": turn.user.email},
            )
            executed = self._failed(request, None, "The call failed inside the host; the error was logged.", started)
        audit_call(self.audit, request, executed, turn, from_app)
        return executed

    async def _run(
        self,
        request: ToolCallRequest,
        turn: TurnState,
        offered: set[str],
        emit: Emit,
        sample: Sampler | None,
        started: float,
        from_app: str | None,
        records: list[HookRecord],
    ) -> ExecutedCall:
        user = turn.user
        access = turn.access_with(self._compliance)
        try:
            if request.name not in offered:
                known = self._pool.registry.get(request.name, user.email)
                if known is not None and not known.approved and self._pool.registry.server_admits(known.server, access):
                    raise ToolQuarantined(request.name, known.trust)  # never offered: say why
                raise ToolError(f"the tool '{request.name}' was not offered in this conversation")
            tool = self._pool.registry.authorize(request.name, access)
        except SwitchboardError as exc:
            log.warning(
                "refused tool call",
                extra={
                    "event": "tool_refused",
                    "user": user.email,
                    "tool": request.name,
                    "error": exc.message,
                    "from_app": from_app,
                },
            )
            refused = self._failed(request, None, f"Refused: {exc.message}.", started)
            refused.event = refused.event.model_copy(update={"reason": exc.reason})
            refused.decision = "deny"
            return refused

        arguments, problem = parse_arguments(request.arguments)
        if arguments is None:
            return self._failed(
                request, tool, f"The arguments were not valid JSON ({problem}); send a JSON object.", started
            )
        config = self._pool.registry.config_of(tool.server)
        try:
            arguments = fill_host_arguments(tool, arguments, turn, self._signer, config)
        except ToolError as exc:
            return self._failed(request, tool, exc.message, started)
        gate = ToolPolicy(self.hooks, turn, tool, from_app, records)
        refill = lambda changed: fill_host_arguments(tool, changed, turn, self._signer, config)  # noqa: E731
        arguments, refusal = await gate.before(arguments, refill)
        if refusal is not None:
            return self._failed(request, tool, refusal, started)

        app = await self._app_of(tool, user.email)
        app_changed = app is not None and self._pool.registry.check_app(tool, app.digest)
        app_digest = app.digest if app is not None else None
        reason = (
            approval_reason(tool, config, turn.conversation.allowed_tools, app_digest, app_changed) if config else None
        )
        if gate.ask is not None:  # a hook's ask (or changed arguments) needs a yes, allowed before or not
            reason = f"{reason}; {gate.ask}" if reason else gate.ask
        approval = None
        if reason is not None:
            if (refusal := await gate.permission(arguments, reason)) is not None:
                return self._failed(request, tool, refusal, started)
            answer = await self.ask(
                request.id, tool.qualified_name, tool.server, arguments, reason, turn, emit, from_app=from_app
            )
            if not answer.approved:
                denied = self._failed(
                    request, tool, answer.reason or "The user denied this tool call; do not retry it unasked.", started
                )
                denied.decision = "deny"
                return denied
            if answer.arguments is not None:
                misfit = schema_problem(tool.input_schema, answer.arguments)
                if misfit is not None:
                    return self._failed(
                        request,
                        tool,
                        f"The edited arguments do not fit the tool ({misfit}); the call was not run.",
                        started,
                    )
                try:
                    arguments = fill_host_arguments(tool, answer.arguments, turn, self._signer, config)
                except ToolError as exc:
                    return self._failed(request, tool, exc.message, started)
                if (refusal := await gate.edited(arguments)) is not None:
                    return self._failed(request, tool, refusal, started)
            if answer.remember:
                turn.allow(allowance_key(tool, app_digest))
            if app_changed and app_digest is not None and turn.access_with(self._compliance).is_admin():
                self._pool.registry.accept_app(tool, app_digest)
            approval = {"answer": "remember" if answer.remember else "approve", "edited": answer.arguments is not None}

        await emit(
            ToolStart(
                call_id=request.id,
                tool=tool.qualified_name,
                server=tool.server,
                arguments=arguments,
                started_at=time.time() * 1000,
                approval=approval,
                from_app=from_app,
            )
        )
        policy = config.sampling if config is not None else "deny"
        sink = TurnSink(
            request.id,
            tool,
            emit,
            turn,
            approval_timeout_s=self._settings.approval_timeout_s,
            elicitation_timeout_s=self._settings.elicitation_timeout_s,
            sample=sample,
            sampling=policy,
        )
        try:
            outcome = await self._pool.call(
                tool, arguments, sink, user=user.email, raw=tool.app_uri is not None or from_app is not None
            )
        except SwitchboardError as exc:
            self._log_call(user.email, tool, started, ok=False, error=exc.message, from_app=from_app)
            executed = self._failed(request, tool, exc.message, started)
        else:
            self._log_call(
                user.email,
                tool,
                started,
                ok=outcome.ok,
                error=None if outcome.ok else outcome.text[:500],
                from_app=from_app,
            )
            if outcome.task is not None:
                outcome = await adopt_task(self.tasks, outcome, request.id, tool, turn, emit)
            else:
                outcome = await gate.after(outcome)
            executed = await self._succeeded(request, tool, outcome, user.email, started, config)
            executed.mcp_result = bounded_for_app(outcome, self._settings.max_app_result_chars)
            if app is not None:
                executed.app_uri, executed.app_digest = tool.app_uri, app.digest
        executed.arguments, executed.ran, executed.decision = arguments, True, "allow"
        executed.pin = tool.definition_hash
        executed.approval = approval
        if approval is not None:
            executed.event = executed.event.model_copy(update={"approval": approval})
        return executed

    async def _app_of(self, tool: ToolInfo, user: str) -> AppResource | None:
        """An app tool's app, read (cached) on the user's session before the call: a changed
        app asks for approval again. An app that cannot be read is not shown; the call still runs."""
        if tool.app_uri is None:
            return None
        try:
            return await self._pool.app_resource(tool, user)
        except SwitchboardError as exc:
            log.warning(
                "could not read a tool's app",
                extra={
                    "event": "app_read_failed",
                    "tool": tool.qualified_name,
                    "uri": tool.app_uri,
                    "error": exc.message,
                },
            )
            return None

    @property
    def settings(self) -> CallSettings:
        return self._settings

    async def ask(
        self,
        call_id: str,
        tool: str,
        server: str,
        arguments: dict[str, Any],
        reason: str,
        turn: TurnState,
        emit: Emit,
        *,
        from_app: str | None = None,
        editable: bool = True,
    ) -> ApprovalAnswer:
        """The user's answer to an approval request (a denial when nobody can answer, or on timeout)."""
        request = ApprovalRequest(
            call_id=call_id,
            tool=tool,
            server=server,
            arguments=arguments,
            reason=reason,
            from_app=from_app,
            editable=editable,
        )
        return await ask_approval(request, turn, emit, self._settings.approval_timeout_s)

    async def _succeeded(
        self,
        request: ToolCallRequest,
        tool: ToolInfo,
        outcome: ToolOutcome,
        owner: str,
        started: float,
        config: ServerConfig | None,
    ) -> ExecutedCall:
        event, text = await self.result_of(
            request.id, tool.qualified_name, tool.server, outcome, owner, int((time.monotonic() - started) * 1000)
        )
        return ExecutedCall(request, event, text)

    async def result_of(
        self, call_id: str, tool: str, server: str, outcome: ToolOutcome, owner: str, duration_ms: int
    ) -> tuple[ToolResultEvent, str]:
        """A call's outcome as its event (artifacts stored) and as the model's text."""
        return await self._results.result_of(call_id, tool, server, outcome, owner, duration_ms)

    @staticmethod
    def _log_call(
        user: str, tool: ToolInfo, started: float, *, ok: bool, error: str | None, from_app: str | None
    ) -> None:
        log.info(
            "tool call",
            extra={
                "event": "tool_call",
                "user": user,
                "tool": tool.qualified_name,
                "server": tool.server,
                "duration_ms": int((time.monotonic() - started) * 1000),
                "ok": ok,
                "error": error,
                "from_app": from_app,  # the call id of the MCP App that made the call, if one did
            },
        )
