"""Where the operator's hooks (policy/) meet the chat core. The turn's points (session_start,
prompt_submit, pre_model, turn_end) are in loop.py; a tool call's (pre_tool, permission_request,
post_tool) are the steps of `ToolPolicy`, which calls.py takes in order. A hook only tightens:
nothing here skips the host's own authorization or approval. Every hook's decision on a call is
kept in `records` (ExecutedCall.hooks), for the call's audit record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import Forbidden, ToolError
from ..policy import Facts, HookRecord, Hooks
from ..tools import ToolInfo, ToolOutcome
from .calls.approvals import schema_problem
from .turn_state import TurnState

__all__ = ["ToolPolicy", "refused", "task_result", "turn_facts"]

MODIFIED = "a policy hook changed the arguments; check them before approving"


def turn_facts(turn: TurnState, **more: Any) -> Facts:
    conversation = turn.conversation
    return Facts(
        email=turn.user.email,
        groups=tuple(sorted(turn.user.groups)),
        conversation_id=conversation.id,
        compliance_level=conversation.compliance_level,
        model=turn.model,
        **more,
    )


def refused(reason: str) -> Forbidden:
    """A turn-level point denied: the turn does not go on, and the user is told why."""
    return Forbidden(f"Refused by policy: {reason}", action="Ask your administrator if this seems wrong.")


class ToolPolicy:
    """The hooks of one tool call."""

    def __init__(
        self, hooks: Hooks, turn: TurnState, tool: ToolInfo, from_app: str | None, records: list[HookRecord]
    ) -> None:
        self._hooks, self._turn, self._tool, self._from_app = hooks, turn, tool, from_app
        self.records = records  # the caller's list: kept even when the call ends early
        self.ask: str | None = None  # the approval a hook requires, when one does

    def _facts(self, **more: Any) -> Facts:
        tool = self._tool
        return turn_facts(
            self._turn,
            tool=tool.qualified_name,
            server=tool.server,
            from_app=self._from_app,
            annotations=dict(tool.annotations),
            **more,
        )

    async def before(
        self, arguments: dict[str, Any], refill: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> tuple[dict[str, Any], str | None]:
        """pre_tool: (the arguments to use, None) or (the arguments, why the call is refused). Changed
        arguments must fit the tool's schema, get the host's own arguments filled in again (`refill`),
        and need the user's approval, whatever the tool's own setting."""
        verdict = await self._hooks.run("pre_tool", self._facts(arguments=arguments))
        self.records += verdict.records
        if verdict.denied is not None:
            return arguments, f"Denied by policy: {verdict.denied}"
        self.ask = verdict.ask
        if verdict.arguments is None:
            return arguments, None
        misfit = schema_problem(self._tool.input_schema, verdict.arguments)
        if misfit is not None:
            return arguments, f"A policy hook changed the arguments so that they no longer fit the tool ({misfit})."
        try:
            changed = refill(verdict.arguments)
        except ToolError as exc:
            return arguments, exc.message
        self.ask = f"{self.ask}; {MODIFIED}" if self.ask else MODIFIED
        return changed, None

    async def permission(self, arguments: dict[str, Any], reason: str) -> str | None:
        """permission_request, before the user is asked: why the call is refused, or None."""
        verdict = await self._hooks.run("permission_request", self._facts(arguments=arguments, reason=reason))
        self.records += verdict.records
        return f"Denied by policy: {verdict.denied}" if verdict.denied is not None else None

    async def edited(self, arguments: dict[str, Any]) -> str | None:
        """pre_tool again, for arguments the user edited: a hook that would deny or change them refuses
        the call (the user may not undo what a hook changed)."""
        verdict = await self._hooks.run("pre_tool", self._facts(arguments=arguments))
        self.records += verdict.records
        if verdict.denied is not None:
            return f"Denied by policy: {verdict.denied}"
        if verdict.arguments is not None:
            return "Denied by policy: a policy hook does not accept the edited arguments as they are."
        return None

    async def after(self, outcome: ToolOutcome) -> ToolOutcome:
        """post_tool: the outcome the user, the model and the store see (a hook may replace its
        content, or withhold it)."""
        verdict = await self._hooks.run("post_tool", self._facts(result=outcome.text, ok=outcome.ok))
        self.records += verdict.records
        if verdict.denied is not None:
            return ToolOutcome(
                ok=False, text=f"The result was withheld by policy: {verdict.denied}", duration_ms=outcome.duration_ms
            )
        if verdict.content is not None:
            return ToolOutcome(ok=outcome.ok, text=verdict.content, duration_ms=outcome.duration_ms)
        return outcome


async def task_result(
    hooks: Hooks, owner: str, conversation_id: str, tool: str, server: str, outcome: ToolOutcome
) -> ToolOutcome:
    """post_tool for a background task's result, when it arrives after its turn (the user's groups
    are not known then: a hook matched by groups does not run)."""
    facts = Facts(
        email=owner, conversation_id=conversation_id, tool=tool, server=server, result=outcome.text, ok=outcome.ok
    )
    verdict = await hooks.run("post_tool", facts)
    if verdict.denied is not None:
        return ToolOutcome(ok=False, text=f"The result was withheld by policy: {verdict.denied}")
    if verdict.content is not None:
        return ToolOutcome(ok=outcome.ok, text=verdict.content)
    return outcome
