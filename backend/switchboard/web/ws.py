"""The websocket door (`/ws`): a pump between the socket and the turn hub.

A reader loop handles client messages while the running turn's events are
pumped to the socket by a second task; cancel, approvals and elicitation
answers therefore arrive while a turn waits.  A malformed message gets an
`error` event and the connection stays open."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from contextlib import aclosing, suppress

from fastapi import APIRouter, WebSocket, WebSocketDisconnect, status

from ..chat import ApprovalAnswer, Subscription
from ..chat.conversation_state import new_id
from ..chat.events import (
    ApprovalResponse,
    AttachedEvent,
    AttachMessage,
    CancelMessage,
    CatalogueChanged,
    ChatMessage,
    ElicitationResponse,
    ErrorEvent,
    MessageDone,
    RenderEvent,
    ServerEvent,
    SessionEvent,
    parse_client_message,
)
from ..chat.pacing import paced
from ..errors import BadRequest, SwitchboardError
from ..identity.access import Access
from ..identity.users import User
from ..services import Services
from ..telemetry import sessions_changed
from ..tools.catalogue_watch import RELOADED
from .authn import user_of

__all__ = ["OpenSockets", "router"]

log = logging.getLogger("switchboard.web")
router = APIRouter()

MAX_MESSAGE_BYTES = 1_000_000
TOKEN_REFUSED = "an API token opens /api and /v1 only; the websocket needs the page's sign-in"
SESSION_REVOKED = "an administrator closed your session"
CATALOGUE_SETTLE_S = 0.2  # a burst of changes (start-up, reload) reaches the page as one event per server


class OpenSockets:
    """The websockets each user holds open in this process, up to `limit` each (every one is a
    file descriptor and ~80 KiB; counted per process, like the other per-user limits kept in memory)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}
        self._closers: dict[str, set[asyncio.Event]] = {}  # set one: that socket closes

    def count(self, user: str) -> int:
        return self._open.get(user, 0)

    def counts(self) -> dict[str, int]:
        """Each user with a page open here, and how many."""
        return {user: n for user, n in self._open.items() if n}

    def closer(self, user: str) -> asyncio.Event:
        event = asyncio.Event()
        self._closers.setdefault(user, set()).add(event)
        return event

    def forget(self, user: str, closer: asyncio.Event) -> None:
        self._closers.get(user, set()).discard(closer)
        if not self._closers.get(user):
            self._closers.pop(user, None)

    def close_user(self, user: str) -> int:
        """Close every socket of `user` here (an administrator revoked their sessions)."""
        closers = self._closers.get(user, set())
        for closer in closers:
            closer.set()
        return len(closers)

    def enter(self, user: str) -> bool:
        if self._open.get(user, 0) >= self.limit:
            return False
        self._open[user] = self._open.get(user, 0) + 1
        return True

    def leave(self, user: str) -> None:
        left = self._open.get(user, 0) - 1
        if left > 0:
            self._open[user] = left
        else:
            self._open.pop(user, None)


def too_many_sockets(limit: int) -> str:
    return f"you have {limit} Switchboard tabs or connections open, the most allowed; close one of them and try again"


class _Connection:
    def __init__(self, websocket: WebSocket, services: Services, user: User) -> None:
        self.websocket = websocket
        # `/ws?html=rest`: the page keeps the renders it drew, so an answer's `message_done` brings
        # only the HTML after them, where this socket sent them all (docs/protocol.md)
        self.settled_sent: dict[str, int] | None = {} if websocket.query_params.get("html") == "rest" else None
        self.services = services
        self.user = user
        self.conversation_id = new_id()  # the connection's current conversation
        self.pump: asyncio.Task[None] | None = None
        self.watcher: asyncio.Task[None] | None = None  # events of the conversation made outside turns (MCP Apps)
        self.watched: str | None = None
        self._send_lock = asyncio.Lock()

    async def send(self, event: ServerEvent) -> None:
        """The websocket's wire form is the event's JSON text (made once per event, for every door)."""
        text = self._wire(event)
        async with self._send_lock:
            await self.websocket.send_text(text)

    def _wire(self, event: ServerEvent) -> str:
        sent = self.settled_sent
        if sent is None:
            return event.to_json()
        if isinstance(event, RenderEvent):
            sent[event.message_id] = sent.get(event.message_id, 0) + len(event.settled)
        elif isinstance(event, MessageDone):
            drawn = sent.pop(event.message_id, None)
            if event.settled_chars and drawn == event.settled_chars:
                return _rest_json(event, event.settled_chars)
        return event.to_json()

    async def error(self, exc: SwitchboardError) -> None:
        await self.send(ErrorEvent.of(exc))

    async def handle(self, raw: str) -> None:
        if len(raw) > MAX_MESSAGE_BYTES:
            await self.error(
                BadRequest("message too large", action=f"Keep messages under {MAX_MESSAGE_BYTES:,} bytes.")
            )
            return
        hub = self.services.turns
        try:
            message = parse_client_message(raw)
            if isinstance(message, ChatMessage):
                await self.follow(await hub.start(self.user, message, self.conversation_id))
            elif isinstance(message, AttachMessage):
                await self.watch_if_owned(message.conversation_id)
                subscription = await hub.attach_anywhere(self.user, message.conversation_id)
                await self.send(
                    AttachedEvent(
                        conversation_id=message.conversation_id,
                        running=subscription is not None,
                        server_time=time.time() * 1000,
                    )
                )
                if subscription is not None:
                    await self.follow(subscription)
            elif isinstance(message, CancelMessage):
                await hub.cancel(self.user, self.conversation_id)
            elif isinstance(message, ApprovalResponse):
                await hub.answer_approval(
                    self.user, message.call_id, ApprovalAnswer(message.approved, message.arguments, message.remember)
                )
            elif isinstance(message, ElicitationResponse):
                await hub.answer_elicitation(self.user, message.request_id, message.action, message.content)
        except SwitchboardError as exc:
            await self.error(exc)

    async def follow(self, subscription: Subscription) -> None:
        """Send this turn's events from now on (one turn followed at a time)."""
        await self.unfollow()
        self.conversation_id = subscription.turn.conversation_id
        self.watch(self.conversation_id)
        self.pump = asyncio.create_task(self._pump(subscription), name=f"pump:{self.user.email}")

    async def watch_if_owned(self, conversation_id: str) -> None:
        """The page shows this conversation: watch it, if it is the user's and stored."""
        if conversation_id == self.watched:
            return
        try:
            stored = await self.services.store.get_conversation(conversation_id)
        except SwitchboardError:
            return  # no store, no apps to hear from
        if stored is not None and stored.owner == self.user.email:
            self.watch(conversation_id)

    def watch(self, conversation_id: str) -> None:
        """Send the events of this conversation made outside its turns (an app's own tool calls)."""
        if conversation_id == self.watched and self.watcher is not None and not self.watcher.done():
            return
        self.unwatch()
        self.watched = conversation_id
        self.watcher = asyncio.create_task(self._watch(conversation_id), name=f"watch:{self.user.email}")

    async def _watch(self, conversation_id: str) -> None:
        with self.services.turns.pages.watch(self.user.email, conversation_id) as queue:
            while True:
                await self.send(await queue.get())

    def unwatch(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
            self.watcher = None
        self.watched = None

    async def _pump(self, subscription: Subscription) -> None:
        async with aclosing(paced(subscription)) as events:  # a fast stream: a batch per frame
            async for event in events:
                await self.send(event)

    async def unfollow(self) -> None:
        pump = self.pump
        if pump is not None and not pump.done():
            pump.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await pump

    def session_event(self, *, refreshed: bool = False) -> SessionEvent:
        return SessionEvent(
            user=self.user.email,
            groups=sorted(self.user.groups),
            conversation_id=self.conversation_id,
            refreshed=True if refreshed else None,
        )


def _rest_json(done: MessageDone, settled: int) -> str:
    """`message_done` for a page that drew the renders: `html_rest`, the HTML after their first
    `settled` characters, instead of `html` (the whole answer again, hundreds of KB for a long one)."""
    data = done.model_dump(mode="json", exclude_none=True, exclude={"html"})
    data["html_rest"] = done.html[settled:]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


async def _forward_catalogue_changes(connection: _Connection) -> None:
    """Tell the page when a server it may use changed its catalogue, so it lists the tools
    again without waiting for a reload (`notifications/tools/list_changed` and the like).
    The user's groups are worked out again for every push; after a reload that changed
    them, the page first gets a refreshed `session`."""
    services = connection.services
    with services.pool.watch.listen() as queue:
        while True:
            servers = {await queue.get()}
            await asyncio.sleep(CATALOGUE_SETTLE_S)
            while not queue.empty():
                servers.add(queue.get_nowait())
            before, connection.user = connection.user, await services.auth.refresh(connection.user)
            if (before.groups, before.admin) != (connection.user.groups, connection.user.admin):
                log.info(
                    "a user's groups changed on an open connection",
                    extra={"event": "groups_changed", "user": connection.user.email},
                )
                await connection.send(connection.session_event(refreshed=True))
            access = Access(connection.user, None, services.config.compliance)
            if RELOADED in servers:  # models, groups and servers may all have changed: the page lists everything again
                await connection.send(CatalogueChanged())
                continue
            for server in sorted(servers):
                config = services.pool.server_config(server)
                if config is None:  # removed: its users' pages refresh, nobody learns its name
                    await connection.send(CatalogueChanged())
                elif access.may_see_server(config):  # administrators see every server's status
                    await connection.send(CatalogueChanged(server=server))


async def _forward_task_events(connection: _Connection) -> None:
    """The user's background tasks (status, progress, questions, results), whichever turn started them."""
    with connection.services.tasks.board.listen(connection.user.email) as queue:
        while True:
            await connection.send(await queue.get())


async def _leave_when_draining(connection: _Connection) -> None:
    """At SIGTERM the page moves to another process: at once when it follows no answer, else as
    soon as the answer it follows has ended (a message it queued meanwhile then goes there)."""
    await connection.services.turns.draining.wait()
    while connection.pump is not None and not connection.pump.done():
        await asyncio.wait({connection.pump})
    async with connection._send_lock:
        await connection.websocket.close(code=status.WS_1012_SERVICE_RESTART)


async def _leave_when_revoked(connection: _Connection, closer: asyncio.Event) -> None:
    await closer.wait()
    async with connection._send_lock:
        await connection.websocket.close(code=status.WS_1008_POLICY_VIOLATION, reason=SESSION_REVOKED)


async def _refuse(websocket: WebSocket, reason: str) -> None:
    await websocket.accept()  # closing before accepting would reach the browser as HTTP 403, not 1008
    await websocket.close(code=status.WS_1008_POLICY_VIOLATION, reason=reason)


@router.websocket("/ws")
async def websocket_endpoint(websocket: WebSocket) -> None:
    services: Services = websocket.app.state.services
    # Host and Origin were checked by RequestGuardMiddleware (web/security.py).
    try:
        user = user_of(websocket)  # found by the authentication backend (web/authn.py)
    except SwitchboardError:
        await _refuse(websocket, "")
        return
    if user.via_token:  # a token is a script's credential for /api and /v1 (docs/api.md); the socket is the page's
        await _refuse(websocket, TOKEN_REFUSED)
        return
    sockets: OpenSockets = websocket.app.state.open_sockets
    if not sockets.enter(user.email):  # not logged: a page retries every few seconds
        await _refuse(websocket, too_many_sockets(sockets.limit))
        return
    closer = sockets.closer(user.email)
    try:
        await _serve(websocket, services, user, closer)
    finally:
        sockets.forget(user.email, closer)
        sockets.leave(user.email)


async def _serve(websocket: WebSocket, services: Services, user: User, closer: asyncio.Event) -> None:
    await websocket.accept()
    sessions_changed(+1)
    connection = _Connection(websocket, services, user)
    await connection.send(connection.session_event())
    catalogue = asyncio.create_task(_forward_catalogue_changes(connection), name=f"catalogue:{user.email}")
    task_events = asyncio.create_task(_forward_task_events(connection), name=f"tasks:{user.email}")
    leaving = asyncio.create_task(_leave_when_draining(connection), name=f"drain:{user.email}")
    revoked = asyncio.create_task(_leave_when_revoked(connection, closer), name=f"revoke:{user.email}")
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            raw = message.get("text")
            if raw is None:
                try:
                    raw = (message.get("bytes") or b"").decode("utf-8")
                except UnicodeDecodeError:
                    await connection.send(ErrorEvent(code="bad_request", message="messages must be UTF-8 JSON text"))
                    continue
            await connection.handle(raw)
    except WebSocketDisconnect:
        pass
    finally:
        # The turn goes on for a while without listeners (a reload attaches again).
        for forwarder in (catalogue, task_events, leaving, revoked):
            forwarder.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await forwarder
        await connection.unfollow()
        connection.unwatch()
        sessions_changed(-1)
