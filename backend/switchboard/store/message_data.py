"""The keys of a stored message's ``data``, per role: what the turn's writers put there and the
readers (the context for the model, the export, apps, the page's API) take out. The stored JSON
is what it always was; these types only name its keys, so mypy checks both sides.

Writers build the role's own type (``UserData``, ``AssistantData``, ``ToolData``); a reader gets
``MessageData``, every key of every role (the message's ``role`` says which it holds). Every key
may be missing: older rows lack the newer ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast

__all__ = [
    "AppCall",
    "AppData",
    "AssistantData",
    "ErrorData",
    "FileRef",
    "MessageData",
    "RoleData",
    "ToolCallData",
    "ToolData",
    "UsageData",
    "UserData",
    "stored_data",
]


class FileRef(TypedDict):
    """A file the user attached (its bytes are in the file store)."""

    id: str
    name: str
    mime: str
    size: int


class ToolCallData(TypedDict):
    id: str
    name: str
    arguments: str  # the model's JSON text, as it sent it


class UsageData(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ErrorData(TypedDict, total=False):
    code: str
    message: str
    action: str


class AppCall(TypedDict, total=False):
    """A call an MCP App made, kept with its tool message (the newest few)."""

    call_id: str
    tool: str
    ok: bool
    ran: bool
    arguments: dict[str, Any] | None
    duration_ms: int
    at: str
    refused: str  # why it did not run


class AppData(TypedDict, total=False):
    """The MCP App of a tool call: enough to mount it again, and what it left for the model."""

    resource_uri: str
    digest: str | None
    calls: list[AppCall]
    model_context: str


class UserData(TypedDict, total=False):
    context: str  # what the attachments added to the text for the model
    files: list[FileRef]
    resources: list[dict[str, Any]]  # MCP resources the user attached


class AssistantData(TypedDict, total=False):
    turn: str  # the id of the answer this message belongs to
    tool_calls: list[ToolCallData]
    finish_reason: str
    usage: UsageData
    error: ErrorData  # why the answer failed (finish_reason "error")


class ToolData(TypedDict, total=False):
    call_id: str
    tool: str
    server: str
    ok: bool
    model_text: str  # what the model was given (the message's content is what the page shows)
    turn: str
    content: str
    arguments: dict[str, Any] | None  # (None: the recorder keeps no key of a None value)
    artifacts: list[dict[str, Any]]
    results: Any  # the tool's structured results, as the server gave them
    display: dict[str, Any]
    duration_ms: int
    approval: dict[str, Any]
    app: AppData
    mcp_result: dict[str, Any] | None  # the whole MCP result, for an app to render
    task_result: str  # the id of the background task this is the late result of


RoleData = UserData | AssistantData | ToolData


class MessageData(UserData, AssistantData, ToolData, total=False):
    """What a reader may find in any message's ``data``."""


def stored_data(raw: Mapping[str, Any] | None) -> MessageData:
    """A stored row's ``data`` as the readers take it. The store's own rows were written through
    the typed writers; they are not validated again (loading a conversation reads every message)."""
    return cast(MessageData, dict(raw or {}))
