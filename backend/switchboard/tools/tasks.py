"""The host's half of the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663).

The host advertises the extension on every request to a 2026-07-28 server. A server may then
answer `tools/call` with a task handle (`resultType: "task"`) instead of the result. Unlike the
SDK's own resolvers, the host does not wait for the task inside the call: the claim's resolver
raises `TaskStarted`, the connection turns it into a `TaskHandle`, and the chat layer stores the
handle and polls it (`tasks/get`), answers its questions (`tasks/update`) and cancels it
(`tasks/cancel`) through the functions below, long after the call returned."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import httpx2
import mcp_types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp_types import RequestParams, Result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field, ValidationError

from mcp import MCPError

from ..errors import ServerUnavailable, TaskGone, ToolError

__all__ = [
    "TASKS_EXTENSION_ID",
    "HostTasksExtension",
    "Question",
    "TaskChannel",
    "TaskHandle",
    "TaskStarted",
    "TaskState",
]

TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
Status = Literal["working", "input_required", "completed", "failed", "cancelled"]


class _TaskFields(Result):
    model_config = ConfigDict(populate_by_name=True)

    task_id: str = Field(alias="taskId")
    status: Status
    ttl_ms: int | None = Field(default=None, alias="ttlMs")
    status_message: str | None = Field(default=None, alias="statusMessage")
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class _Created(_TaskFields):
    """What `tools/call` answers when the server runs the call as a task."""

    result_type: Literal["task"] = Field(alias="resultType")


class _Detailed(_TaskFields):
    """`tasks/get`: the task, with its result, error or input requests inlined."""

    result_type: Literal["complete"] = Field(default="complete", alias="resultType")
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(default=None, alias="inputRequests")


class _TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(serialization_alias="taskId")


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any] = Field(serialization_alias="inputResponses")


class _Get(mcp_types.Request[_TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: _TaskParams


class _Update(mcp_types.Request[_UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams


class _Cancel(mcp_types.Request[_TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: _TaskParams


@dataclass(frozen=True, slots=True)
class TaskHandle:
    """A call the server took on as a task."""

    task_id: str
    status: str
    message: str | None = None
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Question:
    key: str  # the server's key for this input request, echoed in the answer
    message: str
    schema: dict[str, Any]


@dataclass(slots=True)
class TaskState:
    """One `tasks/get` answer, in the host's terms."""

    status: str
    message: str | None = None
    poll_interval_ms: int | None = None
    result: mcp_types.CallToolResult | None = None  # completed
    error: str | None = None  # failed
    questions: list[Question] = field(default_factory=list)  # input_required
    unanswerable: list[str] = field(default_factory=list)  # input requests the host cannot ask (sampling, roots)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


class TaskStarted(Exception):
    """Raised out of `call_tool` when the server answered with a task handle."""

    def __init__(self, handle: TaskHandle) -> None:
        super().__init__(f"the call continues as task {handle.task_id}")
        self.handle = handle


class HostTasksExtension(ClientExtension):
    """Advertises the extension and claims `resultType: "task"`: the call ends with `TaskStarted`."""

    identifier = TASKS_EXTENSION_ID

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (
            ResultClaim(
                result_type="task",
                model=_Created,
                resolve=self._started,
                protocol_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
            ),
        )

    async def _started(self, created: _Created, ctx: ClaimContext) -> mcp_types.CallToolResult:
        raise TaskStarted(
            TaskHandle(
                task_id=created.task_id,
                status=created.status,
                message=created.status_message,
                poll_interval_ms=created.poll_interval_ms,
                ttl_ms=created.ttl_ms,
            )
        )


def _state(detail: _Detailed) -> TaskState:
    state = TaskState(status=detail.status, message=detail.status_message, poll_interval_ms=detail.poll_interval_ms)
    if detail.status == "completed":
        try:
            state.result = mcp_types.CallToolResult.model_validate(detail.result or {})
        except ValidationError as exc:
            state.status, state.error = (
                "failed",
                f"the task's result was not a valid tool result ({exc.error_count()} problems)",
            )
    elif detail.status == "failed":
        message = (detail.error or {}).get("message")
        state.error = message if isinstance(message, str) and message else detail.status_message or "the task failed"
    elif detail.status == "input_required":
        for key, request in (detail.input_requests or {}).items():
            if isinstance(request, dict) and request.get("method") == "elicitation/create":
                params = request.get("params") or {}
                state.questions.append(
                    Question(
                        key=key,
                        message=str(params.get("message", "")),
                        schema=params.get("requestedSchema") or {"type": "object"},
                    )
                )
            else:
                state.unanswerable.append(str(request.get("method") if isinstance(request, dict) else request))
    return state


class TaskChannel:
    """`tasks/get`, `tasks/update` and `tasks/cancel` on one server's live session, with the
    library's errors translated into the host's tree."""

    def __init__(self, server: str, session: ClientSession, timeout_s: float = 30.0) -> None:
        self._server, self._session, self._timeout_s = server, session, timeout_s

    async def get(self, task_id: str) -> TaskState:
        request = _Get(params=_TaskParams(task_id=task_id))
        detail = await self._send(
            lambda: self._session.send_request(request, _Detailed, request_read_timeout_seconds=self._timeout_s)
        )
        return _state(detail)

    async def update(self, task_id: str, answers: dict[str, Any]) -> None:
        """Answers keyed as the server keyed its questions: `{key: {action, content?}}`."""
        request = _Update(params=_UpdateParams(task_id=task_id, input_responses=answers))
        await self._send(
            lambda: self._session.send_request(request, Result, request_read_timeout_seconds=self._timeout_s)
        )

    async def cancel(self, task_id: str) -> None:
        request = _Cancel(params=_TaskParams(task_id=task_id))
        await self._send(
            lambda: self._session.send_request(request, Result, request_read_timeout_seconds=self._timeout_s)
        )

    async def _send(self, send: Callable[[], Awaitable[Any]]) -> Any:
        try:
            return await send()
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                raise ServerUnavailable(f"server '{self._server}' closed the connection") from None
            if exc.code == mcp_types.INVALID_PARAMS:
                raise TaskGone(f"server '{self._server}' no longer knows the task: {exc.message}") from None
            raise ToolError(f"server '{self._server}' refused the task request: {exc.message}") from None
        except ValidationError as exc:
            raise ToolError(
                f"server '{self._server}' answered a task request with an invalid result ({exc.error_count()} problems)"
            ) from None
        except (TimeoutError, OSError, httpx.HTTPError, httpx2.HTTPError) as exc:
            raise ServerUnavailable(
                f"server '{self._server}' did not answer the task request ({type(exc).__name__})"
            ) from None
