"""Turn control across app processes: the seam between the turn hub and the other processes.

A turn runs in the process that started it. `Relay` carries to it, from any other process, what
the user does there (attach, approval and question answers, cancel), and carries its events back.
`LocalRelay` is the one-process case (the SQLite default): nothing to carry. `PostgresRelay` uses
the shared database: `live_turns` says which process runs a conversation's turn, LISTEN/NOTIFY
carries small messages, and a turn followed from another process copies its events into
`turn_events`, where the followers read them: an event crosses as its JSON text (serialized once,
when it is published) and is read back into a typed event once per process. Each process heartbeats; the turns of a process
silent for longer than the lease end as failed, and the user is told.

Messages (JSON on channel `sb_<process>`; `sb_all` for everyone):
  follow {c, user, from}               a listener on `from` wants conversation c's events
  events {c} / end {c}                 new events of c are in turn_events / c's turn is over
  ask {op: approval|elicitation|cancel, user, ..., rid, from} -> ack {rid, ok}
  lost {c}                             c's process died: its followers end the turn as failed"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol

from ..auth import User
from pydantic import ValidationError

from ..errors import BadRequest, SwitchboardError
from .events import ErrorEvent, MessageDone, ServerEvent, event_from_json
from .questions import ApprovalAnswer

from .listeners import END, Subscription

if TYPE_CHECKING:
    from ..store.live import LiveTurns

__all__ = ["LocalRelay", "PostgresRelay", "Relay"]

log = logging.getLogger("switchboard.chat")

ACK_WAIT_S = 5.0
FLUSH_DELAY_S = 0.005  # events of a followed turn are copied out in batches this far apart
LOST = ("The app process running this answer stopped before it finished (it was restarted or lost). "
        "What was written so far is lost.")  # fmt: skip


class Turn(Protocol):
    """What the relay needs of a running turn (chat/turns.py)."""

    @property
    def conversation_id(self) -> str: ...

    def _replay(self) -> list[ServerEvent]: ...


class TurnHub(Protocol):
    """What the relay asks of this process's hub (chat/turns.py)."""

    def running(self, owner: str, conversation_id: str) -> Turn | None: ...

    async def answer_approval(self, user: User, call_id: str, answer: ApprovalAnswer, *, local_only: bool = False) -> None: ...

    async def answer_elicitation(self, user: User, request_id: str, action: str, content: dict | None, *,
                                 local_only: bool = False) -> None: ...  # fmt: skip

    async def cancel(self, user: User, conversation_id: str, *, local_only: bool = False) -> bool: ...


class Relay(Protocol):
    process_id: str

    async def start(self, hub: TurnHub) -> None: ...

    async def stop(self) -> None: ...

    async def claim(self, conversation_id: str, owner: str) -> None: ...

    async def released(self, turn: Turn) -> None: ...

    def published(self, turn: Turn, event: ServerEvent) -> None: ...

    async def attach(self, user: User, conversation_id: str) -> Subscription | None: ...

    async def ask(self, user: User, op: str, **fields: Any) -> bool: ...


class LocalRelay:
    """One process: every turn is here."""

    process_id = "local"

    async def start(self, hub: TurnHub) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def claim(self, conversation_id: str, owner: str) -> None:
        return None

    async def released(self, turn: Turn) -> None:
        return None

    def published(self, turn: Turn, event: ServerEvent) -> None:
        return None

    async def attach(self, user: User, conversation_id: str) -> Subscription | None:
        return None

    async def ask(self, user: User, op: str, **fields: Any) -> bool:
        return False


class _Shared:
    """A turn of this process that listeners on other processes follow."""

    def __init__(self) -> None:
        self.followers: set[str] = set()
        self.next_seq = 1
        self.pending: list[str] = []
        self.flushing: asyncio.Task[None] | None = None


class RemoteTurn:
    """A turn running in another process, followed here: what its listeners here see."""

    def __init__(self, relay: PostgresRelay, conversation_id: str, owner: str) -> None:
        self.relay, self.conversation_id, self.owner = relay, conversation_id, owner
        self.listeners: set[Subscription] = set()
        self.read_upto = 0
        self.ended = False
        self._reading = asyncio.Lock()

    @property
    def running(self) -> bool:
        return not self.ended

    def join(self) -> Subscription:
        subscription = Subscription(self)
        self.listeners.add(subscription)
        return subscription

    def leave(self, subscription: Subscription) -> None:
        self.listeners.discard(subscription)
        if not self.listeners:
            self.relay.unfollow(self)

    async def catch_up(self) -> None:
        async with self._reading:
            for seq, body in await self.relay.live.read_events(self.conversation_id, self.read_upto):
                self.read_upto = seq
                event = _read(body)  # once, whatever the number of listeners
                if event is not None:
                    for listener in self.listeners:
                        listener.queue.put_nowait(event)

    def end(self, *extra: ServerEvent) -> None:
        if self.ended:
            return
        self.ended = True
        for listener in list(self.listeners):
            for event in extra:
                listener.queue.put_nowait(event)
            listener.queue.put_nowait(END)


def _read(body: str) -> ServerEvent | None:
    """An event of another process's turn, from its stored text; None (and a warning) for one this
    process cannot read (a newer version's kind during a rolling update)."""
    try:
        return event_from_json(body)
    except ValidationError:
        log.warning("an event from another process could not be read", extra={"event": "relay_event_unreadable"})
        return None


class PostgresRelay:
    def __init__(self, live: LiveTurns, *, lease_s: float = 30.0,
                 on_lost: Callable[[str, str], Awaitable[None]] | None = None) -> None:  # fmt: skip
        self.live = live
        self.lease_s = lease_s
        self.process_id = secrets.token_hex(8)
        self._on_lost = on_lost
        self._hub: TurnHub | None = None
        self._shared: dict[str, _Shared] = {}
        self._remote: dict[str, RemoteTurn] = {}
        self._acks: dict[str, tuple[asyncio.Future[None], list[bool], int]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._beat: asyncio.Task[None] | None = None

    # -- life -------------------------------------------------------------------------------

    async def start(self, hub: TurnHub) -> None:
        self._hub = hub
        await self.live.heartbeat(self.process_id)
        await self.live.listen([self._channel(self.process_id), "sb_all"], self._received)
        self._beat = asyncio.create_task(self._heartbeats(), name="relay-heartbeat")

    async def stop(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
            with suppress(asyncio.CancelledError):
                await self._beat
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with suppress(SwitchboardError):
            await self.live.forget(self.process_id)
        await self.live.close()

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                await self.live.heartbeat(self.process_id)
                for conversation_id, owner, dead in await self.live.take_dead(self.lease_s, self.process_id):
                    log.warning("answer lost with its process", extra={"event": "turn_lost", "user": owner,
                                                                         "reason": f"process {dead} stopped"})  # fmt: skip
                    if self._on_lost is not None:
                        await self._on_lost(conversation_id, owner)
                    await self.live.notify("sb_all", {"op": "lost", "c": conversation_id})
            except SwitchboardError as exc:
                log.warning("heartbeat failed: %s", exc.message, extra={"event": "relay_heartbeat_failed"})

    @staticmethod
    def _channel(process_id: str) -> str:
        return f"sb_{process_id}"

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the owner's side ---------------------------------------------------------------------

    async def claim(self, conversation_id: str, owner: str) -> None:
        elsewhere = await self.live.claim(conversation_id, owner, self.process_id)
        if elsewhere is not None and elsewhere != self.process_id:
            raise BadRequest("an answer is still being written in this conversation",
                             action="Wait for it to finish, or press Stop.")  # fmt: skip

    async def released(self, turn: Turn) -> None:
        shared = self._shared.pop(turn.conversation_id, None)
        if shared is not None:
            await self._flush(turn.conversation_id, shared)
            for follower in shared.followers:
                await self.live.notify(self._channel(follower), {"op": "end", "c": turn.conversation_id})
        await self.live.release(turn.conversation_id, self.process_id)

    def published(self, turn: Turn, event: ServerEvent) -> None:
        shared = self._shared.get(turn.conversation_id)
        if shared is None:
            return
        shared.pending.append(event.to_json())  # the same text this process's doors send
        if shared.flushing is None or shared.flushing.done():
            shared.flushing = asyncio.create_task(self._flush_soon(turn.conversation_id, shared))

    async def _flush_soon(self, conversation_id: str, shared: _Shared) -> None:
        """Copy events out in batches until none are waiting (events published during a write go
        in the next one)."""
        while shared.pending:
            await asyncio.sleep(FLUSH_DELAY_S)
            await self._flush(conversation_id, shared)

    async def _flush(self, conversation_id: str, shared: _Shared) -> None:
        if not shared.pending:
            return
        bodies, shared.pending = shared.pending, []
        first, shared.next_seq = shared.next_seq, shared.next_seq + len(bodies)
        await self.live.write_events(conversation_id, first, bodies)
        for follower in shared.followers:
            await self.live.notify(self._channel(follower), {"op": "events", "c": conversation_id})

    async def _follow(self, conversation_id: str, owner: str, follower: str) -> None:
        turn = self._hub.running(owner, conversation_id) if self._hub else None
        if turn is None:
            await self.live.notify(self._channel(follower), {"op": "end", "c": conversation_id})
            return
        shared = self._shared.get(conversation_id)
        if shared is None:
            shared = self._shared[conversation_id] = _Shared()
            shared.next_seq = await self.live.last_seq(conversation_id) + 1
            # what was sent so far, then what follows
            shared.pending = [event.to_json() for event in turn._replay()] + shared.pending
        shared.followers.add(follower)
        await self._flush(conversation_id, shared)
        await self.live.notify(self._channel(follower), {"op": "events", "c": conversation_id})

    # -- another process's side ---------------------------------------------------------------

    async def attach(self, user: User, conversation_id: str) -> Subscription | None:
        remote = self._remote.get(conversation_id)
        if remote is None:
            row = await self.live.row(conversation_id)
            if row is None or row[0] != user.email or row[1] == self.process_id:
                return None
            remote = self._remote[conversation_id] = RemoteTurn(self, conversation_id, row[0])
            subscription = remote.join()
            await self.live.notify(self._channel(row[1]), {"op": "follow", "c": conversation_id, "user": user.email,
                                                           "from": self.process_id})  # fmt: skip
            return subscription
        if remote.owner != user.email:
            return None
        subscription = remote.join()
        for seq, body in await self.live.read_events(conversation_id, 0):  # this listener's replay
            if seq <= remote.read_upto and (event := _read(body)) is not None:
                subscription.queue.put_nowait(event)
        return subscription

    def unfollow(self, remote: RemoteTurn) -> None:
        if self._remote.get(remote.conversation_id) is remote:
            del self._remote[remote.conversation_id]

    async def ask(self, user: User, op: str, **fields: Any) -> bool:
        """Send an answer or a cancel to the processes running this user's turns; True when one
        of them took it."""
        targets = [p for p in await self.live.processes_of(user.email) if p != self.process_id]
        if not targets:
            return False
        rid = secrets.token_hex(8)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        answers: list[bool] = []
        self._acks[rid] = (done, answers, len(targets))
        try:
            for target in targets:
                await self.live.notify(self._channel(target), {"op": "ask", "what": op, "user": user.email,
                                                               "rid": rid, "from": self.process_id, **fields})  # fmt: skip
            with suppress(TimeoutError):
                await asyncio.wait_for(done, ACK_WAIT_S)
        finally:
            self._acks.pop(rid, None)
        return any(answers)

    # -- messages -----------------------------------------------------------------------------

    async def _received(self, message: dict[str, Any]) -> None:
        try:
            await self._handle(message)
        except SwitchboardError as exc:
            log.warning("message between processes failed: %s", exc.message, extra={"event": "relay_failed"})
        except Exception:
            log.exception("message between processes failed", extra={"event": "relay_failed"})

    async def _handle(self, message: dict[str, Any]) -> None:
        op, conversation_id = message.get("op"), str(message.get("c", ""))
        if op == "follow":
            await self._follow(conversation_id, str(message.get("user", "")), str(message["from"]))
        elif op in ("events", "end"):
            remote = self._remote.get(conversation_id)
            if remote is not None:
                await remote.catch_up()
                if op == "end":
                    remote.end()
                    self.unfollow(remote)
        elif op == "lost":
            remote = self._remote.pop(conversation_id, None)
            if remote is not None:
                await remote.catch_up()
                remote.end(ErrorEvent(code="internal", message=LOST, action="Send your message again."),
                           MessageDone(message_id="lost", finish_reason="error", html="",
                                       conversation_id=conversation_id))  # fmt: skip
        elif op == "ask":
            ok = await self._answer_here(message)
            await self.live.notify(self._channel(str(message["from"])), {"op": "ack", "rid": message["rid"], "ok": ok})
        elif op == "ack":
            waiting = self._acks.get(str(message.get("rid")))
            if waiting is not None:
                done, answers, expected = waiting
                answers.append(bool(message.get("ok")))
                if (answers[-1] or len(answers) >= expected) and not done.done():
                    done.set_result(None)

    async def _answer_here(self, message: dict[str, Any]) -> bool:
        hub = self._hub
        if hub is None:
            return False
        user = User(email=str(message["user"]), groups=frozenset())
        what = message.get("what")
        try:
            if what == "approval":
                await hub.answer_approval(user, str(message["id"]), ApprovalAnswer(bool(message["approved"]),
                                    message.get("arguments"), bool(message.get("remember"))), local_only=True)  # fmt: skip
            elif what == "elicitation":
                await hub.answer_elicitation(user, str(message["id"]), str(message["action"]), message.get("content"),
                                       local_only=True)  # fmt: skip
            elif what == "cancel":
                return await hub.cancel(user, str(message["c"]), local_only=True)
            else:
                return False
        except SwitchboardError:
            return False
        return True
