"""The websocket protocol's messages (docs/protocol.md), as typed models.

The same models serve every transport. An event is a frozen value from the turn to the wire:
`to_json` makes its JSON text once, however many doors and listeners send it, and
`event_from_json` reads the text back (another process's events) without making it again."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, Final, Literal, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..errors import BadRequest, SwitchboardError

__all__ = [
    "CONVERSATION_ID",
    "MAX_CONTENT_CHARS",
    "MAX_INCOGNITO_STATE_CHARS",
    "PAGE_ONLY",
    "AppEvent",
    "ApprovalRequest",
    "ApprovalResponse",
    "AttachMessage",
    "AttachedEvent",
    "CancelMessage",
    "CatalogueChanged",
    "ChatMessage",
    "ClientMessage",
    "ConversationEvent",
    "ElicitationRequest",
    "ElicitationResponse",
    "ErrorEvent",
    "IncognitoStateEvent",
    "MessageDone",
    "NoticeEvent",
    "RenderEvent",
    "ServerEvent",
    "SessionEvent",
    "TaskEvent",
    "TokenEvent",
    "ToolLog",
    "ToolProgress",
    "ToolResultEvent",
    "ToolStart",
    "event_from_json",
    "parse_client_message",
]


class _Client(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResourceRef(_Client):
    server: str = Field(max_length=64)
    uri: str = Field(max_length=2000)


CONVERSATION_ID = r"^[A-Za-z0-9_-]{8,64}$"
MAX_CONTENT_CHARS = 200_000  # one message's text
MAX_INCOGNITO_STATE_CHARS = 600_000  # the sealed history an incognito chat carries (chat/incognito/sealed.py)


class ChatMessage(_Client):
    type: Literal["chat"]
    content: str = Field(max_length=MAX_CONTENT_CHARS)
    model: str | None = Field(default=None, max_length=200)
    tools: list[str] | None = Field(default=None, max_length=2000)
    files: list[str] = Field(default_factory=list, max_length=20)
    resources: list[ResourceRef] = Field(default_factory=list, max_length=20)
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID)
    # Present (a name, or null for none) changes the level; absent keeps the conversation's.
    compliance_level: str | None = Field(default=None, max_length=100)
    incognito: bool = False  # nothing of this conversation is stored
    # An incognito chat's history, as the server sealed it in the last `incognito_state` event.
    incognito_state: str | None = Field(default=None, max_length=MAX_INCOGNITO_STATE_CHARS)
    edit_of: str | None = Field(default=None, max_length=64)  # an earlier user message this one replaces
    regenerate: bool = False  # answer the last user message again
    tool_exposure: Literal["all", "gateway", "auto"] | None = None  # None: the model's setting

    @property
    def changes_level(self) -> bool:
        return "compliance_level" in self.model_fields_set


class AttachMessage(_Client):
    type: Literal["attach"]
    conversation_id: str = Field(pattern=CONVERSATION_ID)


class CancelMessage(_Client):
    type: Literal["cancel"]


class ApprovalResponse(_Client):
    type: Literal["approval_response"]
    call_id: str
    approved: bool
    arguments: dict[str, Any] | None = None
    remember: bool = False  # "allow for this conversation"


class ElicitationResponse(_Client):
    type: Literal["elicitation_response"]
    request_id: str
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


ClientMessage = Annotated[
    ChatMessage | CancelMessage | ApprovalResponse | ElicitationResponse | AttachMessage, Field(discriminator="type")
]
_client_adapter: TypeAdapter[ClientMessage] = TypeAdapter(ClientMessage)


def parse_client_message(
    raw: str | bytes,
) -> ChatMessage | CancelMessage | ApprovalResponse | ElicitationResponse | AttachMessage:
    try:
        return _client_adapter.validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "message"
        raise BadRequest(
            f"malformed message ({where}: {first['msg']})",
            action="Send one JSON object with a 'type' of chat, cancel, attach, approval_response or "
            "elicitation_response.",
        ) from None


class _Event(BaseModel):
    # Frozen: the text made by the first door stays true for the next.
    model_config = ConfigDict(frozen=True, serialize_by_alias=True)

    def to_json(self) -> str:
        """The wire form: JSON text, `type` first, made once per event (pydantic-core, one step)."""
        return self.json_text

    @cached_property
    def json_text(self) -> str:
        return self.model_dump_json(exclude_none=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copy = super().model_copy(update=update, deep=deep)
        copy.__dict__.pop("json_text", None)  # the copy's text is its own
        return copy


class SessionEvent(_Event):
    type: Literal["session"] = "session"
    user: str
    groups: list[str]
    conversation_id: str
    # Set on a `session` sent again on an open connection: the user's groups changed (a reload).
    refreshed: Literal[True] | None = None


class TokenEvent(_Event):
    type: Literal["token"] = "token"
    text: str


class ToolStart(_Event):
    type: Literal["tool_start"] = "tool_start"
    call_id: str
    tool: str
    server: str
    arguments: dict[str, Any]
    started_at: float | None = (
        None  # server clock, ms since the epoch: a page that joins late shows the true elapsed time
    )
    approval: dict[str, Any] | None = None  # {answer: approve|remember, edited}: how the user let it run
    from_app: str | None = None  # an MCP App made this call: the call id the app was mounted for


class ToolProgress(_Event):
    type: Literal["tool_progress"] = "tool_progress"
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


class ToolLog(_Event):
    type: Literal["tool_log"] = "tool_log"
    call_id: str
    level: str
    message: str


class ApprovalRequest(_Event):
    type: Literal["approval_request"] = "approval_request"
    call_id: str
    tool: str
    server: str
    arguments: dict[str, Any]
    reason: str
    editable: bool = True
    kind: Literal["tool", "sampling"] = "tool"  # sampling: a server asks to use the conversation's model
    from_app: str | None = None  # an MCP App asks to make this call (the call id it was mounted for)


class ElicitationRequest(_Event):
    type: Literal["elicitation_request"] = "elicitation_request"
    request_id: str
    call_id: str | None = None
    message: str
    schema_: dict[str, Any] = Field(validation_alias=AliasChoices("schema_", "schema"), serialization_alias="schema")


class ArtifactRef(BaseModel):
    id: str
    name: str
    mime: str
    size: int
    url: str


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    server: str
    ok: bool
    content: str
    results: Any = None
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    display: dict[str, Any] | None = None
    duration_ms: int = 0
    approval: dict[str, Any] | None = None  # as in ToolStart
    from_app: str | None = None  # as in tool_start
    reason: str | None = None  # why a refused call was refused, in one word (`quarantined`)


class AppEvent(_Event):
    """An app tool's call finished: the page mounts the tool's MCP App (`GET /api/apps/{call_id}`)."""

    type: Literal["app"] = "app"
    call_id: str
    server: str
    tool: str
    resource_uri: str


class RenderEvent(_Event):
    """The text of the round now streaming, rendered so far in top-level blocks: `settled` holds the
    blocks finished since this round's previous render (append it, once), `open` the last block,
    still growing (it replaces the previous render's `open`)."""

    type: Literal["render"] = "render"
    message_id: str
    settled: str
    open: str


class MessageDone(_Event):
    type: Literal["message_done"] = "message_done"
    message_id: str
    finish_reason: Literal["stop", "length", "cancelled", "error", "round_limit"]
    usage: dict[str, int] | None = None
    html: str
    conversation_id: str | None = None
    user_message_id: str | None = None  # the user message this answers
    # `html` begins with this many characters that are the answer's renders' `settled` HTML, in order
    settled_chars: int | None = None


class ConversationEvent(_Event):
    """A turn started (stored) a new conversation."""

    type: Literal["conversation"] = "conversation"
    conversation_id: str
    title: str
    reason: str | None = None  # why a new one, when the client asked to continue another


class IncognitoStateEvent(_Event):
    """An incognito turn's conversation, sealed by the server for the page to send back with its
    next `chat` (the server keeps nothing of it). Sent just before `message_done`."""

    type: Literal["incognito_state"] = "incognito_state"
    conversation_id: str
    state: str


class AttachedEvent(_Event):
    """The answer to `attach`; a running turn's events follow."""

    type: Literal["attached"] = "attached"
    conversation_id: str
    running: bool
    server_time: float | None = None  # ms since the epoch: the page's measure of clock skew for `started_at`


class NoticeEvent(_Event):
    """A turn goes on, but the user should know why it is slow or what changed
    (a model call being retried, a conversation trimmed to fit)."""

    type: Literal["notice"] = "notice"
    code: str
    message: str


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str
    message: str
    action: str | None = None

    @classmethod
    def of(cls, exc: SwitchboardError) -> Self:
        """The event of an error of the tree (the doors' HTTP answers: web/error_render.py)."""
        return cls(code=exc.code, message=exc.message, action=exc.action)


class CatalogueChanged(_Event):
    """A server's tools, resources, prompts or status changed: the page lists them again.
    No `server` when the server left the configuration."""

    type: Literal["catalogue_changed"] = "catalogue_changed"
    server: str | None = None


class TaskEvent(_Event):
    """A background task's state (MCP Tasks). `task_id` is the host's id (the one
    `/api/tasks/{id}/cancel` takes). A finished task also says `ok` and `content` (the
    result as shown), and `message_id`: the stored tool message that holds it."""

    type: Literal["task"] = "task"
    task_id: str
    call_id: str
    server: str
    tool: str
    status: str  # working | input_required | completed | failed | cancelled
    progress: float | None = None
    message: str | None = None
    conversation_id: str | None = None
    ok: bool | None = None
    content: str | None = None
    artifacts: list[ArtifactRef] | None = None
    message_id: str | None = None


ServerEvent = (
    SessionEvent
    | TokenEvent
    | ToolStart
    | ToolProgress
    | ToolLog
    | ApprovalRequest
    | ElicitationRequest
    | ToolResultEvent
    | AppEvent
    | RenderEvent
    | MessageDone
    | NoticeEvent
    | ErrorEvent
    | ConversationEvent
    | IncognitoStateEvent
    | AttachedEvent
    | CatalogueChanged
    | TaskEvent
)
"""Every event a door may send. A door that switches on the kind matches each one (or says it
ignores it) and ends with `assert_never`, so a new kind is followed through every door."""

PAGE_ONLY: Final = (
    SessionEvent,
    ToolLog,
    AppEvent,
    RenderEvent,
    ConversationEvent,
    IncognitoStateEvent,
    AttachedEvent,
    CatalogueChanged,
)
"""The kinds only the page shows (its session state, panels, canvas and lists). A door that shows
text skips them with `isinstance(event, PAGE_ONLY)` before it matches the rest."""

_server_adapter: TypeAdapter[ServerEvent] = TypeAdapter(Annotated[ServerEvent, Field(discriminator="type")])


def event_from_json(text: str | bytes) -> ServerEvent:
    """An event from its wire form (made by `to_json`, here or in another process); its text is
    kept, so sending it on costs no second serialization. Raises pydantic's ValidationError."""
    event = _server_adapter.validate_json(text)
    event.__dict__["json_text"] = text if isinstance(text, str) else text.decode()
    return event
