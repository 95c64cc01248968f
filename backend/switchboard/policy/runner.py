"""Running the hooks of one point, in order, and combining their answers into a Verdict.

The first `deny` ends the point; an `ask` stays; each `modify` applies, and the next hook sees
it. A hook that fails (timeout, crash, an unreadable answer) denies at the pre-execution points
(decisions.FAIL_CLOSED: "the policy check is unavailable") and is passed over elsewhere, unless
its `on_error` says otherwise; either way it is logged. A broken hooks.json runs no hook, and every
pre-execution point denies until it is fixed."""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import time

from ..errors import ConfigError
from ..telemetry import hook_done, hook_span
from .config import HookSet, LoadedHook
from .decisions import FAIL_CLOSED, Decision, HookFailure, HookRecord, Verdict
from .events import Facts, event_of

__all__ = ["UNAVAILABLE", "Hooks"]

log = logging.getLogger("switchboard.policy")

UNAVAILABLE = "the policy check is unavailable"


class Hooks:
    def __init__(self, hooks: HookSet | None = None) -> None:
        self._set = hooks or HookSet()
        self._observing: set[asyncio.Task[Verdict]] = set()

    def use(self, hooks: HookSet) -> None:
        """Switch to a reloaded hooks.json (a point already running finishes on the old one)."""
        self._set = hooks

    def unreadable(self, errors: list[ConfigError]) -> None:
        """hooks.json as it is now cannot be read (a refused reload): fail closed until it can."""
        self._set = HookSet(errors=errors)

    @property
    def broken(self) -> bool:
        return self._set.broken

    def _matching(self, point: str, facts: Facts) -> list[LoadedHook]:
        return [hook for hook in self._set.hooks if hook.spec.event == point and _matches(hook, facts)]

    async def run(self, point: str, facts: Facts) -> Verdict:
        verdict = Verdict()
        if self._set.broken:
            if point in FAIL_CLOSED:
                verdict.denied = UNAVAILABLE
                verdict.records.append(
                    HookRecord("hooks.json", point, "deny", 0.0, UNAVAILABLE, "hooks.json is broken")
                )
            return verdict
        hooks = self._matching(point, facts)
        for hook in hooks:
            decision = await self._one(hook, point, facts, verdict)
            if decision.kind == "deny":
                verdict.denied = decision.reason or f"the policy hook '{hook.id}' denied it"
                break
            if decision.kind == "ask":
                verdict.ask = decision.reason or f"the policy hook '{hook.id}' asks for your approval"
            elif decision.kind == "modify":
                if decision.arguments is not None:
                    verdict.arguments = facts.arguments = decision.arguments
                if decision.content is not None:
                    verdict.content = facts.result = decision.content
                if decision.prompt is not None:
                    verdict.prompt = facts.prompt = decision.prompt
        return verdict

    def observe(self, point: str, facts: Facts) -> None:
        """Run a point's hooks without waiting for them (turn_end: the answer is out already)."""
        if self._set.broken or not self._matching(point, facts):
            return
        task = asyncio.create_task(self.run(point, facts), name=f"hooks:{point}")
        self._observing.add(task)
        task.add_done_callback(self._observing.discard)

    async def _one(self, hook: LoadedHook, point: str, facts: Facts, verdict: Verdict) -> Decision:
        started = time.perf_counter()
        error: str | None = None
        with hook_span(hook.id, point) as span:
            try:
                decision = await hook.handler.decide(event_of(point, facts), point)
            except HookFailure as exc:
                error = exc.message
            except Exception as exc:  # a handler's own bug: a failure like any other
                error = f"failed: {type(exc).__name__}"
            if error is not None:
                decision = _on_failure(hook, point, error)
            duration_s = time.perf_counter() - started
            hook_done(span, hook.id, point, decision.kind, duration_s, error)
        record = HookRecord(hook.id, point, decision.kind, duration_s * 1000, decision.reason, error)
        verdict.records.append(record)
        if error is not None or decision.kind != "allow":
            level = logging.WARNING if error is not None else logging.INFO
            log.log(
                level,
                "hook %s at %s: %s",
                hook.id,
                point,
                error or decision.kind,
                extra={
                    "event": "hook",
                    "hook": hook.id,
                    "point": point,
                    "decision": decision.kind,
                    "reason": decision.reason,
                    "error": error,
                    "duration_ms": round(record.duration_ms, 3),
                    "user": facts.email,
                    "tool": facts.tool,
                },
            )
        return decision


def _on_failure(hook: LoadedHook, point: str, error: str) -> Decision:
    on_error = hook.spec.on_error or ("deny" if point in FAIL_CLOSED else "allow")
    if on_error == "deny":
        return Decision("deny", UNAVAILABLE)
    return Decision("allow")


def _matches(hook: LoadedHook, facts: Facts) -> bool:
    match = hook.spec.match
    if match is None:
        return True
    if match.groups is not None and not set(match.groups) & set(facts.groups):
        return False
    if match.servers is not None and facts.server not in match.servers:
        return False
    if match.tools is not None:
        return facts.tool is not None and any(fnmatch.fnmatchcase(facts.tool, glob) for glob in match.tools)
    return True
