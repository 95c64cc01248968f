"""The seam between the turn hub and the other app processes (chat/relay/postgres.py): what the relay
needs of a turn and of the hub, the interface every relay has, the one-process relay, and the
relay the host is built with (`SwitchedRelay`: one process until the store says otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...identity.users import User
from ..events import ServerEvent
from ..listeners import Subscription
from ..questions import ApprovalAnswer
from .messages import AskRequest

if TYPE_CHECKING:
    from ..open_pages import ConversationPages
    from ..tasks.board import TaskBoard

__all__ = ["Identities", "LocalRelay", "Relay", "SwitchedRelay", "Turn", "TurnHub"]


class Turn(Protocol):
    """What the relay needs of a running turn (chat/turns.py)."""

    @property
    def conversation_id(self) -> str: ...

    @property
    def claimed(self) -> bool:
        """The turn still holds its claim on the conversation (its answer's last write releases it)."""
        ...

    def replay(self) -> list[ServerEvent]:
        """The events sent so far, as a listener that joins now gets them."""
        ...


class Identities(Protocol):
    """The identity door (identity/users.py `Authenticator`)."""

    async def refresh(self, user: User) -> User:
        """The same user, with groups and admin worked out from the current configuration."""
        ...


class TurnHub(Protocol):
    """What the relay asks of this process's hub (chat/turns.py)."""

    pages: ConversationPages
    task_questions: TaskBoard | None
    identities: Identities  # a user named in another process's message comes in through it

    def running(self, owner: str, conversation_id: str) -> Turn | None: ...

    async def answer_approval(
        self, user: User, call_id: str, answer: ApprovalAnswer, *, local_only: bool = False
    ) -> None: ...

    async def answer_elicitation(
        self, user: User, request_id: str, action: str, content: dict | None, *, local_only: bool = False
    ) -> None: ...

    async def cancel(self, user: User, conversation_id: str, *, local_only: bool = False) -> bool: ...


class Relay(Protocol):
    @property
    def process_id(self) -> str: ...

    async def start(self, hub: TurnHub) -> None: ...

    async def stop(self) -> None: ...

    async def claim(self, conversation_id: str, owner: str) -> str | None:
        """Claim the conversation's turn for this process, or raise; the process id whose claim the
        answer's last write releases (None: no claim is stored)."""
        ...

    async def released(self, turn: Turn) -> None: ...

    def published(self, turn: Turn, event: ServerEvent) -> None: ...

    async def attach(self, user: User, conversation_id: str) -> Subscription | None: ...

    async def ask(self, user: User, request: AskRequest) -> bool:
        """Have another process do this for the user (what it holds: a turn, a question); True
        when one did."""
        ...

    def to_pages(self, owner: str, conversation_id: str, text: str) -> None:
        """An event made outside a turn, for the pages of this conversation of the owner's on other processes."""

    def to_user(self, user: str, text: str) -> None:
        """An event of this user's background tasks, for their pages on other processes."""

    def page_opened(self, user: str, page: str) -> None:
        """A page of this user's opened here: the other processes send it their open questions."""

    def reloaded(self) -> None:
        """The configuration was reloaded here: the other processes reload too."""

    def credentials_changed(self, server: str, user: str) -> None:
        """A user's credential for a server changed here: the other processes drop their session."""

    def trust_changed(self, server: str) -> None:
        """An administrator decided on a tool of this server here: the other processes read it again."""

    def admin_changed(self, what: str, user: str = "") -> None:
        """An administrator changed `what` ("servers", a user's "sessions") here: the others follow."""


class LocalRelay:
    """One process: every turn is here."""

    process_id = "local"

    async def start(self, hub: TurnHub) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def claim(self, conversation_id: str, owner: str) -> str | None:
        return None

    async def released(self, turn: Turn) -> None:
        return None

    def published(self, turn: Turn, event: ServerEvent) -> None:
        return None

    async def attach(self, user: User, conversation_id: str) -> Subscription | None:
        return None

    async def ask(self, user: User, request: AskRequest) -> bool:
        return False

    def to_pages(self, owner: str, conversation_id: str, text: str) -> None:
        return None

    def to_user(self, user: str, text: str) -> None:
        return None

    def page_opened(self, user: str, page: str) -> None:
        return None

    def reloaded(self) -> None:
        return None

    def credentials_changed(self, server: str, user: str) -> None:
        return None

    def trust_changed(self, server: str) -> None:
        return None

    def admin_changed(self, what: str, user: str = "") -> None:
        return None


class SwitchedRelay:
    """The relay the hub, the task board and the server pool are built with. It is the one-process
    relay until the store opens on PostgreSQL (then other processes may share the database), and
    from then on the relay over it (`use`), so nothing built earlier is rewired."""

    def __init__(self) -> None:
        self._relay: Relay = LocalRelay()

    @property
    def shared(self) -> bool:
        """Other processes are reachable (`use` was called)."""
        return not isinstance(self._relay, LocalRelay)

    async def use(self, relay: Relay, hub: TurnHub) -> None:
        await relay.start(hub)
        self._relay = relay

    @property
    def current(self) -> Relay:
        """The relay in use now."""
        return self._relay

    @property
    def process_id(self) -> str:
        return self._relay.process_id

    async def start(self, hub: TurnHub) -> None:
        await self._relay.start(hub)

    async def stop(self) -> None:
        await self._relay.stop()

    async def claim(self, conversation_id: str, owner: str) -> str | None:
        return await self._relay.claim(conversation_id, owner)

    async def released(self, turn: Turn) -> None:
        await self._relay.released(turn)

    def published(self, turn: Turn, event: ServerEvent) -> None:
        self._relay.published(turn, event)

    async def attach(self, user: User, conversation_id: str) -> Subscription | None:
        return await self._relay.attach(user, conversation_id)

    async def ask(self, user: User, request: AskRequest) -> bool:
        return await self._relay.ask(user, request)

    def to_pages(self, owner: str, conversation_id: str, text: str) -> None:
        self._relay.to_pages(owner, conversation_id, text)

    def to_user(self, user: str, text: str) -> None:
        self._relay.to_user(user, text)

    def page_opened(self, user: str, page: str) -> None:
        self._relay.page_opened(user, page)

    def reloaded(self) -> None:
        self._relay.reloaded()

    def credentials_changed(self, server: str, user: str) -> None:
        self._relay.credentials_changed(server, user)

    def trust_changed(self, server: str) -> None:
        self._relay.trust_changed(server)

    def admin_changed(self, what: str, user: str = "") -> None:
        self._relay.admin_changed(what, user)
