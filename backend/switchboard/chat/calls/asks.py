"""What a running tool call asks of the user, and what it says meanwhile: the approval before it
runs, and the server's own traffic during it (progress, logs, questions, sampling) as events of
the turn it runs in."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from ...errors import ToolError
from ...tools import ToolInfo
from ..events import ApprovalRequest, ElicitationRequest, ServerEvent, ToolLog, ToolProgress
from ..questions import ApprovalAnswer
from ..turn_state import TurnState

__all__ = ["Emit", "Sampler", "TurnSink", "ask_approval"]

Emit = Callable[[ServerEvent], Awaitable[None]]
Sampler = Callable[[list[dict[str, Any]], str | None, int], Awaitable[str]]


async def ask_approval(request: ApprovalRequest, turn: TurnState, emit: Emit, timeout_s: float) -> ApprovalAnswer:
    """The user's answer to an approval request (a denial when nobody can answer, or on timeout)."""
    refused = turn.preferences.refused()
    if refused is not None:  # the door has nobody to ask (/v1): refused, the model reads why
        return refused
    future = turn.questions.expect_approval(request.call_id)
    await emit(request)
    try:
        return await asyncio.wait_for(future, timeout_s)
    except TimeoutError:
        return ApprovalAnswer(approved=False)
    finally:
        turn.questions.forget_approval(request.call_id)


class TurnSink:
    """Side traffic of one call, turned into events of the running turn."""

    def __init__(
        self,
        call_id: str,
        tool: ToolInfo,
        emit: Emit,
        turn: TurnState,
        *,
        approval_timeout_s: float,
        elicitation_timeout_s: float,
        sample: Sampler | None,
        sampling: str,
    ) -> None:
        self.call_id, self._tool, self._emit, self._turn = call_id, tool, emit, turn
        self._approval_timeout_s, self._elicitation_timeout_s = approval_timeout_s, elicitation_timeout_s
        self._sample, self._sampling = sample, sampling

    @property
    def owner(self) -> TurnState:
        """The user's turn this call runs in (see tools.CallSink)."""
        return self._turn

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._emit(ToolProgress(call_id=self.call_id, progress=progress, total=total, message=message))

    async def log(self, level: str, message: str) -> None:
        await self._emit(ToolLog(call_id=self.call_id, level=level, message=message[:4000]))

    async def elicit(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        if self._turn.preferences.elicitations == "decline":
            return ("decline", None)  # nobody behind this door can answer
        request_id = secrets.token_urlsafe(9)
        future = self._turn.questions.expect_elicitation(request_id)
        await self._emit(
            ElicitationRequest(request_id=request_id, call_id=self.call_id, message=message, schema_=schema)
        )
        try:
            return await asyncio.wait_for(future, self._elicitation_timeout_s)
        except TimeoutError:
            return ("cancel", None)
        finally:
            self._turn.questions.forget_elicitation(request_id)

    async def sample(self, messages: list[dict[str, Any]], system_prompt: str | None, max_tokens: int) -> str:
        """A server asks the conversation's model for a completion (MCP sampling):
        per server `deny`, `allow`, or (default) `ask` the user first."""
        if self._sample is None or self._sampling == "deny":
            raise ToolError("sampling is not available in this conversation")
        if self._sampling == "ask" and self._turn.preferences.refused() is not None:
            raise ToolError("the server asked to use the model, and nobody can approve that here")
        if self._sampling == "ask":
            request = ApprovalRequest(
                call_id=f"sample_{secrets.token_urlsafe(9)}",
                tool=self._tool.qualified_name,
                server=self._tool.server,
                arguments={"messages": messages, "system_prompt": system_prompt, "max_tokens": max_tokens},
                reason=f"The server '{self._tool.server}' asks the conversation's model to answer these messages "
                "(sampling); the server will see the answer.",
                editable=False,
                kind="sampling",
            )
            answer = await ask_approval(request, self._turn, self._emit, self._approval_timeout_s)
            if not answer.approved:
                raise ToolError("the user declined the server's request to use the model")
        await self.log("info", "the server asked the conversation's model for a completion")
        return await self._sample(messages, system_prompt, max_tokens)
