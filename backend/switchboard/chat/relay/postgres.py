"""Turn control across app processes: the seam between the turn hub and the other processes.

A turn runs in the process that started it; `Relay` carries to it what the user does on another
process (attach, answers, cancel) and carries its events back. `LocalRelay`: one process (SQLite).
`PostgresRelay`: `live_turns` says which process runs a turn, LISTEN/NOTIFY carries messages (one
outbox per process: store/live.py), a followed turn's events go inside them (kept in `turn_events`
for late followers: chat/relay/follow.py). Each process heartbeats; the turns of one silent past
the lease end as failed. Messages: chat/relay/messages.py (on `sb_<process>`, or `sb_all`: events
outside turns, reload, credentials, trust, admin); one another version sent is logged, dropped."""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
from collections.abc import Awaitable, Callable
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, assert_never

from ...errors import BadRequest, SwitchboardError
from ...identity.users import User, normalize_email
from ..events import ErrorEvent, MessageDone, ServerEvent
from ..listeners import Subscription
from ..questions import ApprovalAnswer
from .follow import Pieces, RemoteTurn, Shared, channel, pieces, read_event
from .messages import (
    Ack,
    AdminChanged,
    ApprovalAsk,
    Ask,
    AskRequest,
    Broadcast,
    CancelAsk,
    CredentialsChanged,
    ElicitationAsk,
    EventBatch,
    EventsInTable,
    Follow,
    PageEvent,
    QuestionsWanted,
    Reader,
    RelayMessage,
    Reloaded,
    TrustChanged,
    TurnEnd,
    TurnLost,
    UserEvent,
    encode,
)
from .seam import LocalRelay, Relay, Turn, TurnHub

if TYPE_CHECKING:
    from ...store.live import LiveTurns

__all__ = ["LocalRelay", "PostgresRelay", "Relay", "Turn", "TurnHub"]

log = logging.getLogger("switchboard.chat")

ACK_WAIT_S = 5.0
LOST = (
    "The app process running this answer stopped before it finished (it was restarted or lost). "
    "What was written so far is lost."
)


class PostgresRelay:
    def __init__(
        self,
        live: LiveTurns,
        *,
        lease_s: float = 30.0,
        on_lost: Callable[[str, str], Awaitable[None]] | None = None,
        on_reload: Callable[[], Awaitable[None]] | None = None,
        on_credentials: Callable[[str, str], Awaitable[None]] | None = None,
        on_admin: Callable[[str, str], Awaitable[None]] | None = None,  # (what, user): AdminChanged
        on_trust: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.live = live
        self.lease_s = lease_s
        self.process_id = secrets.token_hex(8)
        self._on_lost = on_lost
        self._on_reload = on_reload
        self._on_credentials, self._on_trust, self._on_admin = on_credentials, on_trust, on_admin
        self._hub: TurnHub | None = None
        self._shared: dict[str, Shared] = {}
        self._remote: dict[str, RemoteTurn] = {}
        self._acks: dict[str, tuple[asyncio.Future[None], list[bool], int]] = {}
        self._pieces = Pieces()
        self._beat: asyncio.Task[None] | None = None
        self._reader = Reader()

    # -- life -------------------------------------------------------------------------------

    async def start(self, hub: TurnHub) -> None:
        self._hub = hub
        await self.live.heartbeat(self.process_id)
        await self.live.listen([channel(self.process_id), "sb_all"], self._received)
        self._beat = asyncio.create_task(self._heartbeats(), name="relay-heartbeat")

    async def stop(self) -> None:
        if self._beat is not None:
            self._beat.cancel()
            with suppress(asyncio.CancelledError):
                await self._beat
        with suppress(SwitchboardError):
            await self.live.forget(self.process_id)
        await self.live.close()

    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                if await self.live.keep_listening():
                    log.warning("listening to the other processes again", extra={"event": "relay_listening_again"})
                await self.live.heartbeat(self.process_id)
                for conversation_id, owner, dead in await self.live.take_dead(self.lease_s, self.process_id):
                    log.warning(
                        "answer lost with its process",
                        extra={"event": "turn_lost", "user": owner, "reason": f"process {dead} stopped"},
                    )
                    if self._on_lost is not None:
                        await self._on_lost(conversation_id, owner)
                    await self.live.notify("sb_all", encode(TurnLost(conversation_id=conversation_id)))
            except SwitchboardError as exc:
                log.warning("heartbeat failed: %s", exc.message, extra={"event": "relay_heartbeat_failed"})

    def _post(self, to: str, message: RelayMessage) -> None:
        self.live.outbox.post((to, encode(message)))

    # -- the owner's side ---------------------------------------------------------------------

    async def claim(self, conversation_id: str, owner: str) -> str:
        elsewhere = await self.live.claim(conversation_id, owner, self.process_id)
        if elsewhere is None or elsewhere == self.process_id:
            return self.process_id
        row = await self.live.row(conversation_id)
        now = datetime.now(UTC)
        silent = row is not None and row[1] == elsewhere and (row[2] is None or now - row[2] > self._silent_after)
        if silent:  # its process died: the heartbeats of the others take the claim once the lease has lapsed
            assert row is not None
            lapses = self.lease_s - (now - row[2]).total_seconds() if row[2] is not None else 0.0
            within = math.ceil(max(lapses, 0.0) + self.lease_s / 3)
            raise BadRequest(
                f"the process writing this answer stopped; it is released within {within} s",
                action="Send your message again then.",
            )
        raise BadRequest(
            "an answer is still being written in this conversation", action="Wait for it to finish, or press Stop."
        )

    @property
    def _silent_after(self) -> timedelta:
        """A process heartbeats every third of the lease: one that missed a beat is taken to have stopped."""
        return timedelta(seconds=self.lease_s / 2)

    async def released(self, turn: Turn) -> None:
        shared = self._shared.pop(turn.conversation_id, None)
        if shared is not None:
            for follower in sorted(shared.followers):  # after the turn's last events (posted before)
                self._post(channel(follower), TurnEnd(conversation_id=turn.conversation_id, upto=shared.upto))
        if turn.claimed:  # (usually released already, by the write of the answer's last message)
            await self.live.release(turn.conversation_id, self.process_id)

    def published(self, turn: Turn, event: ServerEvent) -> None:
        shared = self._shared.get(turn.conversation_id)
        if shared is not None:
            self._gather(shared, [event.to_json()])  # the same text this process's doors send

    def _gather(self, shared: Shared, texts: list[str]) -> None:
        """Events go out with the outbox's next statement, with whatever else came by then."""
        shared.pending += texts
        if not shared.queued:
            shared.queued = True
            self.live.outbox.post(shared.batch)

    async def _follow(self, conversation_id: str, owner: str, follower: str) -> None:
        turn = self._hub.running(owner, conversation_id) if self._hub else None
        if turn is None:
            self._post(channel(follower), TurnEnd(conversation_id=conversation_id))
            return
        shared = self._shared.get(conversation_id)
        if shared is None:  # the first follower: what was sent so far, then what follows (no await between)
            shared = self._shared[conversation_id] = Shared(conversation_id)
            shared.followers.add(follower)
            self._gather(shared, [event.to_json() for event in turn.replay()])
        else:  # a later one reads what was sent so far from the table
            shared.followers.add(follower)
            self._post(channel(follower), EventsInTable(conversation_id=conversation_id))

    # -- another process's side ---------------------------------------------------------------

    async def attach(self, user: User, conversation_id: str) -> Subscription | None:
        remote = self._remote.get(conversation_id)
        if remote is None:
            row = await self.live.row(conversation_id)
            if row is None or row[0] != user.email or row[1] == self.process_id:
                return None
            remote = self._remote.get(conversation_id)  # another listener here may have come meanwhile
            if remote is None:
                remote = self._remote[conversation_id] = RemoteTurn(
                    conversation_id, row[0], self.live.read_events, self.unfollow
                )
                subscription = remote.join()
                self._post(
                    channel(row[1]), Follow(conversation_id=conversation_id, user=user.email, sender=self.process_id)
                )
                # The turn may have ended since the row was read: then the owner answers with the
                # end and nothing else, and the caller is told no turn runs (the page reads the
                # stored outcome) rather than given a stream that ends without a message_done.
                with suppress(TimeoutError):
                    await asyncio.wait_for(remote.answered.wait(), ACK_WAIT_S)
                if remote.ended and not remote.log:
                    remote.leave(subscription)
                    return None
                return subscription
        if remote.owner != user.email:
            return None
        return remote.join()  # the events so far, from this process's copy, then the rest

    def unfollow(self, remote: RemoteTurn) -> None:
        if self._remote.get(remote.conversation_id) is remote:
            del self._remote[remote.conversation_id]

    async def ask(self, user: User, request: AskRequest) -> bool:
        """Send an answer or a cancel to the processes that may hold what it answers (a cancel: those running
        the user's turns; an answer: every live one, a question may wait anywhere); True when one took it."""
        if isinstance(request, CancelAsk):
            targets = [p for p in await self.live.processes_of(user.email) if p != self.process_id]
        else:
            targets = await self.live.alive(self.lease_s, self.process_id)
        if not targets:
            return False
        rid = secrets.token_hex(8)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        answers: list[bool] = []
        self._acks[rid] = (done, answers, len(targets))
        message = Ask(
            user=user.email,
            vouched_groups=tuple(sorted(user.vouched_groups)),
            via_token=user.via_token,
            ask_id=rid,
            sender=self.process_id,
            request=request,
        )
        try:
            for target in targets:
                self._post(channel(target), message)
            with suppress(TimeoutError):
                await asyncio.wait_for(done, ACK_WAIT_S)
        finally:
            self._acks.pop(rid, None)
        return any(answers)

    # -- events made outside turns, and reloads ----------------------------------------------

    def to_pages(self, owner: str, conversation_id: str, text: str) -> None:
        for message in pieces(PageEvent(conversation_id=conversation_id, owner=owner, sender=self.process_id), text):
            self._post("sb_all", message)

    def to_user(self, user: str, text: str, *, page: str | None = None, to: str = "sb_all") -> None:
        for message in pieces(UserEvent(owner=user, sender=self.process_id, page=page or None), text):
            self._post(to, message)

    def page_opened(self, user: str, page: str) -> None:
        self._post("sb_all", QuestionsWanted(owner=user, page=page, sender=self.process_id))

    def reloaded(self) -> None:
        self._post("sb_all", Reloaded(sender=self.process_id))

    def credentials_changed(self, server: str, user: str) -> None:
        self._post("sb_all", CredentialsChanged(server=server, owner=user, sender=self.process_id))

    def trust_changed(self, server: str) -> None:
        self._post("sb_all", TrustChanged(server=server, sender=self.process_id))

    def admin_changed(self, what: str, user: str = "") -> None:
        self._post("sb_all", AdminChanged(what=what, owner=user, sender=self.process_id))

    # -- messages -----------------------------------------------------------------------------

    def _received(self, text: str) -> Awaitable[None] | None:
        """A message from another process: events continuing a follower's are delivered at once, the rest in a task."""
        message = self._reader.read(text)
        if message is None:
            return None
        if isinstance(message, EventBatch):
            remote = self._remote.get(message.conversation_id)
            if remote is None or remote.take(message.first, message.bodies):
                return None
        return self._guarded(message)

    async def _guarded(self, message: RelayMessage) -> None:
        try:
            await self._handle(message)
        except SwitchboardError as exc:
            log.warning("message between processes failed: %s", exc.message, extra={"event": "relay_failed"})
        except Exception:
            log.exception("message between processes failed", extra={"event": "relay_failed"})

    async def _handle(self, message: RelayMessage) -> None:
        if isinstance(message, Broadcast) and message.sender == self.process_id:
            return  # sent to everyone, this process included: it has them already
        match message:
            case EventBatch() | EventsInTable():  # (a batch here does not continue what it has: read)
                remote = self._remote.get(message.conversation_id)
                if remote is not None:
                    await remote.catch_up()
            case TurnEnd():
                remote = self._remote.get(message.conversation_id)
                if remote is not None:
                    if remote.read_upto < message.upto:
                        await remote.catch_up()
                    remote.end()
                    self.unfollow(remote)
            case Follow():
                await self._follow(message.conversation_id, message.user, message.sender)
            case TurnLost():
                await self._lost(message.conversation_id)
            case Ask():
                ok = await self._answer_here(message)
                self._post(channel(message.sender), Ack(ask_id=message.ask_id, ok=ok))
            case Ack():
                waiting = self._acks.get(message.ask_id)
                if waiting is not None:
                    done, answers, expected = waiting
                    answers.append(message.ok)
                    if (message.ok or len(answers) >= expected) and not done.done():
                        done.set_result(None)
            case PageEvent() | UserEvent():
                self._deliver_outside_turns(message)
            case QuestionsWanted():
                if self._hub is not None and self._hub.task_questions is not None:
                    for question in self._hub.task_questions.open_questions(message.owner):
                        self.to_user(message.owner, question.to_json(), page=message.page, to=channel(message.sender))
            case Reloaded():
                if self._on_reload is not None:
                    await self._on_reload()
            case CredentialsChanged():
                if self._on_credentials is not None:
                    await self._on_credentials(message.server, message.owner)
            case TrustChanged():
                if self._on_trust is not None:
                    await self._on_trust(message.server)
            case AdminChanged():
                if self._on_admin is not None:
                    await self._on_admin(message.what, message.owner)
            case _:
                assert_never(message)  # a new kind of message is handled here too

    async def _lost(self, conversation_id: str) -> None:
        remote = self._remote.pop(conversation_id, None)
        if remote is not None:
            await remote.catch_up()
            remote.end(
                ErrorEvent(code="internal", message=LOST, action="Send your message again."),
                MessageDone(message_id="lost", finish_reason="error", html="", conversation_id=conversation_id),
            )

    def _deliver_outside_turns(self, message: PageEvent | UserEvent) -> None:
        text = self._pieces.text(message)
        event = read_event(text) if text is not None else None
        if event is None or self._hub is None:
            return
        board = self._hub.task_questions
        if isinstance(message, PageEvent):
            self._hub.pages.deliver(message.owner, message.conversation_id, event)
        elif board is not None and message.page is not None:
            board.deliver_to(message.page, event)
        elif board is not None:
            board.deliver(message.owner, event)

    async def _answer_here(self, message: Ask) -> bool:
        """Do what another process asks for a user, as that user (worked out here from the address and groups sent)."""
        hub = self._hub
        if hub is None:
            return False
        try:
            user = await hub.identities.refresh(
                User(
                    email=normalize_email(message.user),
                    vouched_groups=frozenset(message.vouched_groups),
                    via_token=message.via_token,
                )
            )
            request = message.request
            match request:
                case ApprovalAsk():
                    answer = ApprovalAnswer(request.approved, request.arguments, request.remember, request.reason)
                    await hub.answer_approval(user, request.call_id, answer, local_only=True)
                case ElicitationAsk():
                    await hub.answer_elicitation(
                        user, request.request_id, request.action, request.content, local_only=True
                    )
                case CancelAsk():
                    return await hub.cancel(user, request.conversation_id, local_only=True)
        except SwitchboardError:
            return False
        return True
