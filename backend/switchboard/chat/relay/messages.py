"""The messages between app processes (chat/relay/postgres.py), as typed models: one per operation, told
apart by `op`, with readable names in code and short keys on the wire (a NOTIFY payload holds at
most `MAX_PAYLOAD` bytes: store/live.py). `encode` makes a message's text (compact ASCII JSON, so
its length is its size), `decode` reads one back and raises `ValueError` (pydantic's
ValidationError) for a text it cannot read: another version's message during a rolling restart,
which the relay logs and drops. Fields a newer version adds are ignored.

  follow {c, user, from}               a listener on `from` wants conversation c's events
  ev {c, s, b: [event, ...]}           c's events numbered s, s+1, ...
  events {c}                           c's next events are in turn_events (large, or a late follower)
  end {c, upto}                        c's turn is over after event `upto`
  ask {u, g, tk, rid, from, q}         a request (q: cancel {c} | approval {id, ...} | elicitation
                                       {id, ...}) from user u (vouched groups g, via a token tk)
                                       -> ack {rid, ok}
  lost {c}                             c's process died: its followers end the turn as failed
  page {c, u, t, from} / user {u, t, from}  an event for the pages showing u's conversation c / of user u
                                       (a large t comes in pieces: id, i, n; `k`: for one page)
  questions {u, k, from}               page k of user u opened on `from`: send it u's open questions
  reload {from}                        an administrator reloaded the configuration on `from`
  credentials {s, u, from}             user u's credential for server s changed on `from`
  trust {s, from}                      an administrator approved or blocked a tool of server s on `from`
  admin {w, u, from}                   an administrator changed `w` on `from`: "servers", or
                                       "sessions" (user u's open pages are closed)"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "Ack",
    "AdminChanged",
    "ApprovalAsk",
    "Ask",
    "AskRequest",
    "Broadcast",
    "CancelAsk",
    "CredentialsChanged",
    "ElicitationAsk",
    "EventBatch",
    "EventsInTable",
    "Follow",
    "PageEvent",
    "QuestionsWanted",
    "Reader",
    "RelayMessage",
    "Reloaded",
    "TrustChanged",
    "TurnEnd",
    "TurnLost",
    "UserEvent",
    "decode",
    "encode",
]

log = logging.getLogger("switchboard.chat")


class _Wire(BaseModel):
    """A message: readable field names in code (and to build one), short keys on the wire."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, validate_by_alias=True, extra="ignore")


# -- what one process asks another to do for a user (`Relay.ask`) ---------------------------------


class CancelAsk(_Wire):
    what: Literal["cancel"] = "cancel"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")


class ApprovalAsk(_Wire):
    what: Literal["approval"] = "approval"
    call_id: str = Field(validation_alias="id", serialization_alias="id")
    approved: bool
    arguments: dict[str, Any] | None = None
    remember: bool = False
    reason: str | None = None


class ElicitationAsk(_Wire):
    what: Literal["elicitation"] = "elicitation"
    request_id: str = Field(validation_alias="id", serialization_alias="id")
    action: str
    content: dict[str, Any] | None = None


AskRequest = Annotated[CancelAsk | ApprovalAsk | ElicitationAsk, Field(discriminator="what")]


# -- the messages ---------------------------------------------------------------------------------


class Follow(_Wire):
    op: Literal["follow"] = "follow"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")
    user: str
    sender: str = Field(validation_alias="from", serialization_alias="from")


class EventBatch(_Wire):
    op: Literal["ev"] = "ev"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")
    first: int = Field(validation_alias="s", serialization_alias="s")
    bodies: list[str] = Field(validation_alias="b", serialization_alias="b")  # the events' JSON texts


class EventsInTable(_Wire):
    op: Literal["events"] = "events"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")


class TurnEnd(_Wire):
    op: Literal["end"] = "end"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")
    upto: int = 0


class Ask(_Wire):
    op: Literal["ask"] = "ask"
    user: str = Field(validation_alias="u", serialization_alias="u")
    vouched_groups: tuple[str, ...] = Field(
        default=(), validation_alias="g", serialization_alias="g"
    )  # the proxy's groups header, where sent
    via_token: bool = Field(default=False, validation_alias="tk", serialization_alias="tk")
    ask_id: str = Field(validation_alias="rid", serialization_alias="rid")
    sender: str = Field(validation_alias="from", serialization_alias="from")
    request: AskRequest = Field(validation_alias="q", serialization_alias="q")


class Ack(_Wire):
    op: Literal["ack"] = "ack"
    ask_id: str = Field(validation_alias="rid", serialization_alias="rid")
    ok: bool


class TurnLost(_Wire):
    op: Literal["lost"] = "lost"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")


class _Text(_Wire):
    """A message carrying an event's text, whole or one piece of it (`Pieces` puts them together)."""

    owner: str = Field(validation_alias="u", serialization_alias="u")
    sender: str = Field(validation_alias="from", serialization_alias="from")
    text: str = Field(default="", validation_alias="t", serialization_alias="t")
    piece_of: str | None = Field(
        default=None, validation_alias="id", serialization_alias="id"
    )  # the text's token, when sent in pieces
    index: int = Field(default=0, validation_alias="i", serialization_alias="i")
    count: int = Field(default=1, validation_alias="n", serialization_alias="n")


class PageEvent(_Text):
    op: Literal["page"] = "page"
    conversation_id: str = Field(validation_alias="c", serialization_alias="c")


class UserEvent(_Text):
    op: Literal["user"] = "user"
    page: str | None = Field(
        default=None, validation_alias="k", serialization_alias="k"
    )  # for this one page of the user's only


class QuestionsWanted(_Wire):
    op: Literal["questions"] = "questions"
    owner: str = Field(validation_alias="u", serialization_alias="u")
    page: str = Field(validation_alias="k", serialization_alias="k")
    sender: str = Field(validation_alias="from", serialization_alias="from")


class Reloaded(_Wire):
    op: Literal["reload"] = "reload"
    sender: str = Field(validation_alias="from", serialization_alias="from")


class CredentialsChanged(_Wire):
    op: Literal["credentials"] = "credentials"
    server: str = Field(validation_alias="s", serialization_alias="s")
    owner: str = Field(validation_alias="u", serialization_alias="u")
    sender: str = Field(validation_alias="from", serialization_alias="from")


class TrustChanged(_Wire):
    op: Literal["trust"] = "trust"
    server: str = Field(validation_alias="s", serialization_alias="s")
    sender: str = Field(validation_alias="from", serialization_alias="from")


class AdminChanged(_Wire):
    op: Literal["admin"] = "admin"
    what: str = Field(validation_alias="w", serialization_alias="w")
    owner: str = Field(default="", validation_alias="u", serialization_alias="u")
    sender: str = Field(validation_alias="from", serialization_alias="from")


# Sent to every process, the sender included (which passes over its own).
Broadcast = PageEvent | UserEvent | QuestionsWanted | Reloaded | CredentialsChanged | TrustChanged | AdminChanged

RelayMessage = (
    Follow
    | EventBatch
    | EventsInTable
    | TurnEnd
    | Ask
    | Ack
    | TurnLost
    | PageEvent
    | UserEvent
    | QuestionsWanted
    | Reloaded
    | CredentialsChanged
    | TrustChanged
    | AdminChanged
)
_adapter: TypeAdapter[RelayMessage] = TypeAdapter(Annotated[RelayMessage, Field(discriminator="op")])


def encode(message: RelayMessage) -> str:
    """The message as sent: compact JSON, ASCII only, short keys, fields at their default left out
    (but `op` and an ask's `what`, which say what it is)."""
    fields = message.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if isinstance(message, Ask):
        fields["q"] = {"what": message.request.what, **fields["q"]}
    return json.dumps({"op": message.op, **fields}, separators=(",", ":"))


def decode(text: str | bytes) -> RelayMessage:
    """A message from its text; raises ValueError (pydantic's ValidationError) when it is not one
    this version knows."""
    return _adapter.validate_json(text)


class Reader:
    """Reads the messages that come to a process: one it cannot read is dropped, and logged once
    per kind (at a rolling restart the other version may send many)."""

    def __init__(self) -> None:
        self._logged: set[str] = set()

    def read(self, text: str) -> RelayMessage | None:
        try:
            return decode(text)
        except ValidationError as exc:
            kind = text.partition('"op":')[2][:24].split(",")[0].strip('"}')
            level = logging.DEBUG if kind in self._logged else logging.WARNING
            self._logged.add(kind)
            log.log(
                level,
                "a message from another process could not be read (%s, %d errors): dropped",
                kind or "no op",
                exc.error_count(),
                extra={"event": "relay_bad_message"},
            )
            return None
