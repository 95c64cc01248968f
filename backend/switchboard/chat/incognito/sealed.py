"""An incognito conversation held by the page: its state sealed by the server.

Nothing of an incognito conversation is written anywhere on the server. After each turn the page
gets `incognito_state`: the conversation's history and what a turn needs of it (compliance levels,
"allow for this conversation", its files), as JSON, compressed, encrypted and authenticated
(Fernet: AES-128-CBC + HMAC-SHA256) with a key derived from `SWITCHBOARD_SECRET_KEY`, and naming
its user and conversation inside. The page sends it back with its next `chat`, to any app process
(they share the key). The browser is untrusted: a state that was not sealed by this deployment,
that belongs to another user or conversation, that is older than the idle limit or larger than
`MAX_STATE_CHARS` is refused, and its contents are validated again after opening. The page cannot
add or edit a message, a tool result or an allowance: only what the server sealed opens.

A long conversation is cut to fit: the oldest tool results first become a short note (as the
model's context window does), then the oldest exchanges go."""

from __future__ import annotations

import base64
import zlib
from dataclasses import dataclass, replace
from typing import Annotated, Literal

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import BadRequest
from ...history import TRIMMED_TOOL_RESULT, AssistantText, CallRecord, HistoryRecord, ToolReply, UserText
from ..events import MAX_INCOGNITO_STATE_CHARS

__all__ = ["MAX_STATE_CHARS", "IncognitoSeal", "OpenedState", "seal_key"]

MAX_STATE_CHARS = MAX_INCOGNITO_STATE_CHARS  # the sealed text; a `chat` message may be 1,000,000 bytes in all
_VERSION: Literal[1] = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _User(_Model):
    k: Literal["u"]
    id: str = Field(max_length=64)
    text: str
    context: str = ""


class _Assistant(_Model):
    k: Literal["a"]
    id: str = Field(max_length=64)
    text: str
    calls: list[tuple[str, str, str]] = []
    fr: str | None = None


class _Tool(_Model):
    k: Literal["t"]
    id: str = Field(max_length=64)
    call_id: str = Field(max_length=200)
    tool: str = Field(max_length=200)
    server: str = Field(max_length=200)
    ok: bool
    text: str
    late: bool = False


class _State(_Model):
    v: Literal[1]
    u: str  # the user it belongs to
    c: str  # the conversation
    level: str | None = None
    levels: list[str | None] = []
    allowed: list[str] = []
    files: list[str] = []  # uploads attached in it
    made: list[str] = []  # artifacts its tools made
    h: list[Annotated[_User | _Assistant | _Tool, Field(discriminator="k")]] = []


@dataclass(frozen=True, slots=True)
class OpenedState:
    history: list[HistoryRecord]
    compliance_level: str | None
    levels_used: list[str | None]
    allowed_tools: set[str]
    files: list[str]
    made_files: list[str]


def seal_key(secret: bytes | str) -> bytes:
    """The Fernet key for incognito states, derived from the app's secret (the same on every process)."""
    secret = secret.encode() if isinstance(secret, str) else secret
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"switchboard", info=b"incognito state").derive(secret)
    return base64.urlsafe_b64encode(raw)


class IncognitoSeal:
    def __init__(self, key: bytes, *, max_age_s: float = 86400.0, max_chars: int = MAX_STATE_CHARS) -> None:
        self._fernet = Fernet(key)
        self.max_age_s = max_age_s
        self.max_chars = max_chars

    def seal(self, user: str, conversation_id: str, state: OpenedState) -> str:
        history = list(state.history)
        while True:
            body = _State(
                v=_VERSION,
                u=user,
                c=conversation_id,
                level=state.compliance_level,
                levels=state.levels_used,
                allowed=sorted(state.allowed_tools),
                files=state.files,
                made=state.made_files,
                h=[_dump(r) for r in history],
            )
            sealed = self._fernet.encrypt(zlib.compress(body.model_dump_json().encode(), 6)).decode()
            if len(sealed) <= self.max_chars or not history:
                return sealed
            history = _shorter(history)

    def open(self, sealed: str, user: str, conversation_id: str) -> OpenedState:
        """The state the server sealed for this user and conversation; BadRequest for anything else."""
        if len(sealed) > self.max_chars:
            raise BadRequest(f"incognito_state is larger than {self.max_chars:,} characters")
        try:
            plain = zlib.decompressobj().decompress(
                self._fernet.decrypt(sealed.encode(), ttl=int(self.max_age_s)), self.max_chars * 20
            )
            body = _State.model_validate_json(plain)
        except (InvalidToken, zlib.error, ValidationError, ValueError):
            raise BadRequest(
                "incognito_state was not made by this server for this conversation, or has expired",
                action="Start a new incognito chat.",
            ) from None
        if body.u != user or body.c != conversation_id:
            raise BadRequest("incognito_state belongs to another conversation", action="Start a new incognito chat.")
        return OpenedState(
            history=[_load(r) for r in body.h],
            compliance_level=body.level,
            levels_used=list(body.levels),
            allowed_tools=set(body.allowed),
            files=list(body.files),
            made_files=list(body.made),
        )


def _dump(record: HistoryRecord) -> _User | _Assistant | _Tool:
    if isinstance(record, UserText):
        return _User(k="u", id=record.id, text=record.text, context=record.context)
    if isinstance(record, AssistantText):
        return _Assistant(
            k="a",
            id=record.id,
            text=record.text,
            fr=record.finish_reason,
            calls=[(c.call_id, c.name, c.arguments) for c in record.calls],
        )
    return _Tool(
        k="t",
        id=record.id,
        call_id=record.call_id,
        tool=record.tool,
        server=record.server,
        ok=record.ok,
        text=record.text,
        late=record.late,
    )


def _load(item: _User | _Assistant | _Tool) -> HistoryRecord:
    if isinstance(item, _User):
        return UserText(id=item.id, text=item.text, context=item.context)
    if isinstance(item, _Assistant):
        return AssistantText(
            id=item.id, text=item.text, finish_reason=item.fr, calls=tuple(CallRecord(*c) for c in item.calls)
        )
    return ToolReply(
        id=item.id, call_id=item.call_id, tool=item.tool, server=item.server, ok=item.ok, text=item.text, late=item.late
    )


def _shorter(history: list[HistoryRecord]) -> list[HistoryRecord]:
    """The history a little shorter: the oldest full tool result becomes a note, else the oldest
    exchange (a user message and what answered it) goes."""
    for index, record in enumerate(history):
        if isinstance(record, ToolReply) and record.text != TRIMMED_TOOL_RESULT:
            return [*history[:index], replace(record, text=TRIMMED_TOOL_RESULT), *history[index + 1 :]]
    starts = [i for i, r in enumerate(history) if isinstance(r, UserText)]
    return history[starts[1] :] if len(starts) > 1 else []
