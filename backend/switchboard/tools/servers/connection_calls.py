"""The calls of one server's connection (connection.py): tool calls with an idle limit that
progress resets, resource reads (kept as long as the server allows), prompts and the session
for `tasks/*`; MCP failures become the host's errors here."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx
import httpx2
import mcp_types
from fastmcp import Client
from mcp.client import InputRequiredRoundsExceededError
from pydantic import ValidationError

from mcp import MCPError

from ...config.models import ServerConfig
from ...errors import ServerUnavailable, ToolError, ToolTimeout
from ..call_traffic import Activity, CallTraffic
from ..connection_state import ConnectionSetup
from ..diagnostics import HttpTrace, describe_failure
from ..models import CallSink, ServerStatus
from ..tasks import TaskHandle, TaskStarted

if TYPE_CHECKING:
    from ..freshness import ReadCache

__all__ = ["ConnectionCalls"]

OVERALL_CAP_FACTOR = 10  # a call may run this many idle limits in all


class ConnectionCalls:
    """Part of `ServerConnection`: requests on its live session."""

    name: str
    config: ServerConfig
    status: ServerStatus
    ready_event: asyncio.Event
    _client: Client[Any] | None
    _traffic: CallTraffic
    _trace: HttpTrace
    _reads: ReadCache
    _broken: asyncio.Event
    _setup: ConnectionSetup

    @property
    def busy(self) -> bool:
        return self._traffic.busy

    # -- calls -----------------------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, Any], sink: CallSink, *, timeout_s: float | None = None
    ) -> mcp_types.CallToolResult | TaskHandle:
        client = self._client
        if client is None or self.status.status != "ready":
            why = f": {self.status.reason}" if self.status.reason else ""
            raise ServerUnavailable(f"server '{self.name}' is {self.status.status}{why}")
        idle_limit = timeout_s or self.config.timeout_s
        loop = asyncio.get_running_loop()
        started = loop.time()
        with self._traffic.tracking(sink, started) as activity:

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                activity.last = loop.time()
                await sink.progress(progress, total, message)

            with self._traffic.routed_to(sink):
                task = asyncio.create_task(client.call_tool_mcp(tool, arguments, progress_handler=on_progress))
            return await self._await_call(task, tool, activity, started, idle_limit)

    async def _await_call(
        self,
        task: asyncio.Task[mcp_types.CallToolResult],
        tool: str,
        activity: Activity,
        started: float,
        idle_limit: float,
    ) -> mcp_types.CallToolResult | TaskHandle:
        """The call's result, stopping it when it stays silent too long; MCP failures translated."""
        loop = asyncio.get_running_loop()
        try:
            while not task.done():
                now = loop.time()
                if activity.waiting:
                    activity.last = now
                idle_left = activity.last + idle_limit - now
                cap_left = started + idle_limit * OVERALL_CAP_FACTOR - now
                if idle_left <= 0 or cap_left <= 0:
                    task.cancel()
                    ran = now - started
                    if cap_left <= 0:
                        raise ToolTimeout(f"'{tool}' ran {ran:.0f} s, the most any call to '{self.name}' may run")
                    raise ToolTimeout(
                        f"'{tool}' sent nothing for {idle_limit:g} s (ran {ran:.0f} s in all) and was stopped"
                    )
                await asyncio.wait({task}, timeout=min(idle_left, cap_left))
            return task.result()
        except TaskStarted as started_task:
            return started_task.handle
        except asyncio.CancelledError:
            task.cancel()
            raise
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._mark_broken()
                raise ServerUnavailable(
                    f"server '{self.name}' stopped during the call and is being restarted; try again shortly"
                ) from None
            raise ToolError(f"server '{self.name}' refused the call: {exc.message}") from None
        except InputRequiredRoundsExceededError:
            raise ToolError(
                f"server '{self.name}' kept asking for input for more than {self._setup.input_rounds} rounds and was "
                "stopped (the limit is SWITCHBOARD_MCP_INPUT_ROUNDS)"
            ) from None
        except ValidationError as exc:
            raise ToolError(
                f"server '{self.name}' answered with an invalid result ({exc.error_count()} problems, "
                f"first: {exc.errors()[0]['msg']}); the tool may be broken"
            ) from None
        except (OSError, httpx.HTTPError, httpx2.HTTPError) as exc:
            self._mark_broken()
            why = describe_failure(exc, url=self.config.url or "", trace=self._trace)
            raise ServerUnavailable(f"server '{self.name}' is unreachable: {why}") from None

    def _mark_broken(self) -> None:
        self._broken.set()
        self.ready_event.clear()  # callers waiting for readiness wait for the reconnect
        # At once, so no call sees "ready" without a session; the supervisor
        # reports the change (logs, registry) when it notices.
        self.status = replace(self.status, status="starting", reason="the connection was lost; reconnecting")

    def task_session(self) -> Any:
        """The live MCP session, for `tasks/*` requests (tools/tasks.py)."""
        return self._live_client().session

    def _live_client(self) -> Client[Any]:
        client = self._client
        if client is None:
            raise ServerUnavailable(f"server '{self.name}' is {self.status.status}")
        return client

    async def read_resource(self, uri: str) -> list[Any]:
        try:
            cached = self._reads.get(uri)
            if cached is None:
                cached = await self._live_client().read_resource_mcp(uri)
                self._reads.put(uri, cached)
            return list(cached.contents)
        except InputRequiredRoundsExceededError:
            raise ToolError(f"server '{self.name}' kept asking for input while reading {uri}") from None
        except MCPError as exc:
            raise ToolError(f"server '{self.name}' could not read {uri}: {exc.message}") from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[tuple[str, str]]:
        """The prompt's messages as (role, text)."""
        try:
            result = await self._live_client().get_prompt_mcp(name, arguments)
        except MCPError as exc:
            raise ToolError(f"server '{self.name}' could not give the prompt '{name}': {exc.message}") from None
        out = []
        for message in result.messages:
            content = message.content
            text = content.text if isinstance(content, mcp_types.TextContent) else f"[{content.type} content]"
            out.append((str(message.role), text))
        return out
