"""The task poller: one per process. It holds the lease on the stored tasks it follows, polls
each server with `tasks/get` (backoff from a quick first look up to the server's
`pollIntervalMs`), puts a task's questions to its owner and sends the answers with
`tasks/update`, and when a task ends stores its result in the conversation (a tool message)
and tells the owner's open pages (`task` events).

Tasks outlive the turn, the page and the process: at start-up the poller takes every active task
whose lease has lapsed (a stopped process released its leases; a dead one loses them after `lease_s`)."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from ...errors import ServerUnavailable, SwitchboardError, TaskGone, TooMany
from ...policy import Hooks
from ...store.message_data import ToolData
from ...store.tasks import TaskRecord, TaskRecords
from ...tools import ServerPool, ToolOutcome
from ..calls.results import CallResults
from ..conversation_state import new_id
from ..conversations import Conversations
from ..events import ElicitationRequest, TaskEvent
from ..policy_points import task_result
from .board import TaskBoard

__all__ = ["TaskPoller", "TaskSettings"]

log = logging.getLogger("switchboard.tasks")

FIRST_POLL_S = 0.05  # a quick task is seen finished at once; the backoff doubles from here
DEFAULT_POLL_S = 5.0  # when the server does not say (`pollIntervalMs`)
UNREACHABLE_RETRY_CAP_S = 30.0


@dataclass(frozen=True, slots=True)
class TaskSettings:
    lease_s: float = 30.0  # another process takes a task whose lease has lapsed this long
    max_poll_s: float = 30.0  # never wait longer than this between two polls of a task
    min_poll_s: float = 1.0  # never more often, once the first quick looks are done, whatever the server says
    concurrency: int = 32  # polls in flight at once
    question_timeout_s: float = 600.0
    give_up_after: int = 20  # failed polls in a row (server refusing) before the task is marked failed
    max_per_user: int = 16  # active tasks per user (SWITCHBOARD_MAX_TASKS_PER_USER); a call past it is refused
    max_status_chars: int = 1000  # of a server's status message, stored and sent (longer: cut, and says so)
    input_rounds: int = 10  # rounds of questions a task may ask (SWITCHBOARD_MCP_INPUT_ROUNDS) before it is stopped


@dataclass(slots=True)
class _Held:
    record: TaskRecord
    due: float = 0.0
    backoff: float = FIRST_POLL_S
    failures: int = 0
    busy: bool = False  # a poll or a question is in flight
    rounds: int = 0  # rounds of questions answered (by this process)
    last: tuple[str, str | None] = ("", None)  # (status, message) last told
    cancelling: bool = False
    stopped: str | None = None  # why the host stopped the task itself (it ends failed, saying so)


@dataclass
class TaskPoller:
    pool: ServerPool
    conversations: Conversations
    results: CallResults  # a finished task's result, made as a call's is
    hooks: Hooks  # the policy hooks (`task_result`), the call runner's
    board: TaskBoard = field(default_factory=TaskBoard)
    settings: TaskSettings = field(default_factory=TaskSettings)
    # (owner, conversation id): a turn runs there now (chat/running.py): the result waits for it
    is_turn_running: Callable[[str, str], bool] = lambda owner, conversation_id: False
    owner_id: str = field(default_factory=lambda: f"p-{secrets.token_hex(6)}")  # this process, for leases
    _held: dict[str, _Held] = field(default_factory=dict)
    _loop: asyncio.Task[None] | None = None
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _limit: asyncio.Semaphore | None = None
    _work: set[asyncio.Task[None]] = field(default_factory=set)
    polls: int = 0  # tasks/get sent (benchmarks, tests)

    @property
    def records(self) -> TaskRecords:
        return TaskRecords(self.conversations.store)

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        if self._loop is None:
            self._limit = asyncio.Semaphore(self.settings.concurrency)
            self._loop = asyncio.create_task(self._run(), name="task-poller")

    async def stop(self) -> None:
        loop, self._loop = self._loop, None
        work = [*self._work, *([loop] if loop else [])]
        for task in work:
            task.cancel()
        await asyncio.gather(*work, return_exceptions=True)
        if self._held:
            try:
                await self.records.release(self.owner_id)  # another process (or the next start) takes them at once
            except SwitchboardError as exc:
                log.warning("could not release task leases: %s", exc.message)
        self._held.clear()

    def held(self) -> int:
        return len(self._held)

    # -- adopting and cancelling ---------------------------------------------------------

    async def adopt(
        self, handle: Any, *, owner: str, conversation_id: str, server: str, tool: str, call_id: str
    ) -> TaskEvent:
        """Keep and follow the task a call started; raises TooMany (the server's task cancelled) when
        the owner has `max_per_user` tasks running already."""
        record = await self.records.add(
            id=new_id(),
            task_id=handle.task_id,
            owner=owner,
            conversation_id=conversation_id,
            server=server,
            tool=tool,
            call_id=call_id,
            status=handle.status,
            message=self._status(handle.message),
            poll_interval_ms=handle.poll_interval_ms,
            lease_owner=self.owner_id,
            lease_s=self.settings.lease_s,
            most_active=self.settings.max_per_user,
        )
        if record is None:
            with suppress(SwitchboardError):  # (the server's own expiry ends it otherwise)
                await (await self.pool.tasks_of(server, owner)).cancel(handle.task_id)
            running = await self.records.active_of(owner)
            log.warning(
                "task refused: too many running",
                extra={"event": "task_refused", "user": owner, "server": server, "tool": tool},
            )
            raise TooMany(
                f"You have {running} background tasks running, the most one user may have "
                f"({self.settings.max_per_user}), so the server's new task was cancelled",
                action="Wait for one of them to finish, or cancel one, then try again.",
            )
        held = _Held(record, due=time.monotonic() + FIRST_POLL_S, last=(record.status, record.message))
        self._held[record.id] = held
        self._wake.set()
        log.info(
            "task started",
            extra={"event": "task_started", "user": owner, "server": server, "tool": tool, "task": record.id},
        )
        return _event(record, record.status, record.message)

    async def cancel(self, owner: str, id: str) -> TaskRecord | None:
        """Ask the server to cancel one of `owner`'s tasks; None when the owner has no such task."""
        record = await self.records.get(id)
        if record is None or record.owner != owner:
            return None
        if not record.active:
            return record
        channel = await self.pool.tasks_of(record.server, record.owner)
        await channel.cancel(record.task_id)
        held = self._held.get(id)
        if held is not None:
            held.cancelling, held.due, held.backoff = True, 0.0, FIRST_POLL_S
            self._wake.set()
        return record

    # -- the loop ---------------------------------------------------------------------

    async def _run(self) -> None:
        next_lease = 0.0
        while True:
            now = time.monotonic()
            if now >= next_lease:
                next_lease = now + self.settings.lease_s / 3
                await self._renew()
            for held in list(self._held.values()):
                if not held.busy and held.due <= now:
                    held.busy = True
                    self._spawn(self._poll(held))
            due = [h.due for h in self._held.values() if not h.busy]
            wait = min([*due, next_lease]) - time.monotonic()
            self._wake.clear()
            if wait > 0:
                with suppress(TimeoutError):
                    async with asyncio.timeout(wait):  # (no inner task to leave behind, unlike wait_for)
                        await self._wake.wait()

    async def _renew(self) -> None:
        """Keep the leases held, and take the active tasks nobody holds (start-up, a dead process)."""
        try:
            records = await self.records.lease(self.owner_id, self.settings.lease_s)
        except SwitchboardError as exc:
            log.warning("could not renew task leases: %s", exc.message)
            return
        for record in records:
            if record.id not in self._held:
                self._held[record.id] = _Held(record, last=(record.status, record.message))

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def _poll(self, held: _Held) -> None:
        record = held.record
        try:
            assert self._limit is not None
            async with self._limit:
                channel = await self.pool.tasks_of(record.server, record.owner)
                state = await channel.get(record.task_id)
                self.polls += 1
            held.failures = 0
            if state.terminal:
                await self._finish(held, None if held.stopped else state, error=held.stopped)
                return
            message = self._status(state.message)
            if state.status != held.last[0] or message != held.last[1]:
                held.last = (state.status, message)
                await self.records.update(
                    record.id, status=state.status, message=message, poll_interval_ms=state.poll_interval_ms
                )
                self.board.publish(record.owner, _event(record, state.status, message))
            if state.status == "input_required":
                if held.rounds >= self.settings.input_rounds:
                    await self._stop_asking(held, channel)
                    return
                held.rounds += 1
                await self._ask(held, channel, state)
                held.backoff = FIRST_POLL_S
                held.due = time.monotonic()
                return
            wanted = state.poll_interval_ms / 1000 if state.poll_interval_ms else DEFAULT_POLL_S
            ceiling = max(min(max(wanted, self.settings.min_poll_s), self.settings.max_poll_s), FIRST_POLL_S)
            held.due = time.monotonic() + min(held.backoff, ceiling)
            held.backoff = min(held.backoff * 2, ceiling)
        except TaskGone as exc:
            await self._finish(held, None, error=exc.message)
        except ServerUnavailable:
            held.due = time.monotonic() + min(UNREACHABLE_RETRY_CAP_S, max(1.0, held.backoff * 4))  # back when it is
        except SwitchboardError as exc:
            held.failures += 1
            if held.failures >= self.settings.give_up_after:
                await self._finish(held, None, error=f"the host gave up following the task: {exc.message}")
            else:
                held.due = time.monotonic() + min(UNREACHABLE_RETRY_CAP_S, 2.0**held.failures)
        except Exception:
            log.exception("task poll failed", extra={"event": "task_poll_failed", "task": record.id})
            held.due = time.monotonic() + UNREACHABLE_RETRY_CAP_S
        finally:
            held.busy = False
            self._wake.set()

    def _status(self, message: str | None) -> str | None:
        """A server's status message as stored and sent: cut at `max_status_chars`, saying so."""
        limit = self.settings.max_status_chars
        if message is None or len(message) <= limit:
            return message
        return f"{message[:limit]}… [cut: the status was {len(message):,} characters]"

    async def _stop_asking(self, held: _Held, channel: Any) -> None:
        """A task that keeps asking for input is cancelled at the server and ends as failed."""
        record = held.record
        log.warning(
            "task kept asking for input",
            extra={"event": "task_input_rounds", "user": record.owner, "server": record.server, "task": record.id},
        )
        held.stopped = (
            f"server '{record.server}' kept asking for input for more than {self.settings.input_rounds} "
            "rounds and was stopped (the limit is SWITCHBOARD_MCP_INPUT_ROUNDS)"
        )
        with suppress(SwitchboardError):
            await channel.cancel(record.task_id)
        await self._finish(held, None, error=held.stopped)

    async def _ask(self, held: _Held, channel: Any, state: Any) -> None:
        """Each question to the owner's pages (as `elicitation_request`), then the answers to the server."""
        record = held.record
        answers: dict[str, Any] = {}
        for question in state.questions:
            request_id = f"task_{secrets.token_urlsafe(9)}"
            asked = ElicitationRequest(
                request_id=request_id, call_id=record.call_id, message=question.message, schema_=question.schema
            )
            future = self.board.ask(record.owner, request_id, asked)
            try:
                action, content = await asyncio.wait_for(future, self.settings.question_timeout_s)
            except TimeoutError:
                action, content = "cancel", None
            finally:
                self.board.forget(request_id)
            answers[question.key] = {
                "action": action,
                **({"content": content} if action == "accept" and content else {}),
            }
        for key in state.unanswerable:
            log.info("task %s asked for input the host cannot give (%s)", record.id, key)
        await channel.update(record.task_id, answers)

    async def _finish(self, held: _Held, state: Any, *, error: str | None = None) -> None:
        """Store the result in the conversation, then tell the owner's pages."""
        record = held.record
        if self.is_turn_running(record.owner, record.conversation_id):
            held.due = time.monotonic() + 1.0  # added once the running answer is stored, so it stays in order
            return
        status = state.status if state is not None else "failed"
        if state is not None and state.result is not None:
            outcome = await self.pool.task_outcome(record.server, record.owner, state.result)
        elif status == "cancelled":
            outcome = ToolOutcome(ok=False, text="The task was cancelled.")
        else:
            outcome = ToolOutcome(
                ok=False, text=f"The task failed: {error or (state.error if state else None) or 'no reason given'}"
            )
        outcome = await task_result(
            self.hooks, record.owner, record.conversation_id, record.tool, record.server, outcome
        )
        duration_ms = int((time.time() - record.created_at.timestamp()) * 1000)
        event, model_text = await self.results.result_of(
            record.call_id, record.tool, record.server, outcome, record.owner, duration_ms
        )
        message_id = await self._store_result(record, event, model_text)
        await self.records.update(
            record.id,
            status=status,
            message=event.content[:500] if not event.ok else record.message,
            result={"ok": event.ok, "content": event.content, "message_id": message_id},
            lease_owner=None,
            lease_until=None,
        )
        self._held.pop(record.id, None)
        finished = _event(
            record,
            status,
            None if event.ok else event.content[:500],
            ok=event.ok,
            content=event.content,
            message_id=message_id,
            artifacts=event.artifacts or None,
        )
        self.board.publish(record.owner, finished)
        log.info(
            "task finished",
            extra={
                "event": "task_finished",
                "user": record.owner,
                "server": record.server,
                "tool": record.tool,
                "task": record.id,
                "status": status,
            },
        )

    async def _store_result(self, record: TaskRecord, event: Any, model_text: str) -> str | None:
        store = self.conversations.store
        conversation = await store.get_conversation(record.conversation_id)
        if conversation is None or conversation.owner != record.owner:
            return None  # incognito, deleted since, or (never) another user's: the owner's pages still hear of it
        message_id = new_id()
        data: ToolData = {
            "call_id": record.call_id,
            "tool": record.tool,
            "server": record.server,
            "ok": event.ok,
            "model_text": model_text,
            "task_result": record.id,
            "content": event.content,
            "artifacts": [a.model_dump() for a in event.artifacts],
        }
        if event.results is not None:
            data["results"] = event.results
        if event.display is not None:
            data["display"] = event.display
        data["duration_ms"] = event.duration_ms
        await store.add_message(
            record.conversation_id,
            id=message_id,
            parent_id=conversation.leaf_id,
            role="tool",
            content=event.content,
            data=data,
        )
        return message_id


def _event(record: TaskRecord, status: str, message: str | None, **finished: Any) -> TaskEvent:
    return TaskEvent(
        task_id=record.id,
        call_id=record.call_id,
        server=record.server,
        tool=record.tool,
        status=status,
        message=message,
        conversation_id=record.conversation_id,
        **finished,
    )
