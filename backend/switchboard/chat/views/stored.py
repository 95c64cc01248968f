"""What the HTTP API shows of stored conversations: a conversation with its
active branch (assistant text rendered and sanitized here, on the server),
the branches a message has, and exports."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ...store import Conversation, Message, Outline, active_path
from .markdown import unsigned
from .render import render_markdown

__all__ = ["conversation_view", "export_json", "page_view", "siblings_of"]


def siblings_of(messages: Sequence[Message | Outline]) -> dict[str, list[str]]:
    """For each message that has siblings (other answers or edits under its parent): all of them."""
    children: dict[str | None, list[str]] = defaultdict(list)
    for message in messages:  # in seq order
        children[message.parent_id].append(message.id)
    return {child: ids for ids in children.values() if len(ids) > 1 for child in ids}


def conversation_view(conversation: Conversation, messages: list[Message]) -> dict[str, Any]:
    """The conversation's fields and its active branch, as the page shows it."""
    return page_view(conversation, active_path(messages, conversation.leaf_id), siblings_of(messages))


def page_view(conversation: Conversation, path: list[Message], siblings: dict[str, list[str]]) -> dict[str, Any]:
    """The conversation's fields and `path` (its active branch, or a page of it)."""
    shown = []
    for message in path:
        entry = message.to_api()
        entry.pop("context", None)  # host-added text for the model; the page shows files instead
        entry.pop("model_text", None)
        if message.role == "assistant":
            entry["html"] = render_markdown(message.content)
        _app_mark(entry)
        if message.id in siblings:
            entry["siblings"] = siblings[message.id]
        shown.append(entry)
    return {**conversation.to_api(), "messages": shown}


def _app_mark(entry: dict[str, Any]) -> None:
    """A tool message that mounts an MCP App shows `app: {resource_uri}`; the rest of what is kept
    for the app (the whole MCP result, its context and calls) is read through /api/apps."""
    entry.pop("mcp_result", None)
    app = entry.pop("app", None)
    if entry["role"] == "tool" and isinstance(app, dict) and app.get("resource_uri"):
        entry["app"] = {"resource_uri": app["resource_uri"]}


def export_json(conversation: Conversation, messages: list[Message]) -> str:
    view = conversation_view(conversation, messages)
    for message in view["messages"]:
        message.pop("html", None)
    # A download is passed on: signed file links (valid for anyone until they expire) are not.
    return json.dumps(unsigned(view), indent=2, ensure_ascii=False)
