"""A stored conversation as a Markdown document (the download of the page's Export).

Each answer sits under "Assistant", its tool calls with it (never under "You"); blocks are
separated by one blank line. What the host filled into tool calls for the user stays out: a
signed link to an attached file becomes the file's name, and the owner's address in tool
arguments and results becomes "(you)". A message that was edited says how many other versions
it has (an answer, how often it was regenerated), since only the branch shown is exported. Text from
the model, tools and users is neutralized as `export_safe` says: no image or HTML of it loads in a viewer."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import defaultdict
from typing import Any

from ...store import Conversation, Message, active_path
from ...store.message_data import ErrorData
from .markdown_safe import code_span, fenced, safe_inline, safe_markdown

__all__ = ["export_filename", "export_markdown", "unsigned"]

_SIGNED_LINK = re.compile(r"https?://[^\s\"'<>]*/api/files/([A-Za-z0-9_-]+)/content\?[^\s\"'<>]*")
_FINISH_NOTES = {
    "cancelled": "Stopped before the answer was finished.",
    "length": "The answer was cut at its length limit.",
    "round_limit": "The answer stopped at the limit of tool rounds.",
}
_RESULT_CHARS = 20_000


def unsigned(value: Any) -> Any:
    """`value` (JSON-shaped) with every signed file link, a bearer capability for anyone who holds
    it, replaced by the file's own address, which needs the owner's sign-in."""
    if isinstance(value, str):
        return _SIGNED_LINK.sub(lambda m: f"/api/artifacts/{m.group(1)}?download=true", value)
    if isinstance(value, list):
        return [unsigned(item) for item in value]
    if isinstance(value, dict):
        return {key: unsigned(item) for key, item in value.items()}
    return value


def export_markdown(conversation: Conversation, messages: list[Message]) -> str:
    files = {f["id"]: f["name"] for m in messages if m.role == "user" for f in m.data.get("files", []) if "id" in f}
    private = _Scrubber(conversation.owner, files)
    versions = _versions(messages)
    meta = [f"{conversation.created_at:%Y-%m-%d %H:%M} UTC"]
    meta += [f"model {conversation.model}"] if conversation.model else []
    meta += [f"compliance level {conversation.compliance_level}"] if conversation.compliance_level else []
    blocks = [f"# {safe_inline(conversation.title)}", f"_{safe_inline(' · '.join(meta))}_"]
    answering = False
    for message in active_path(messages, conversation.leaf_id):
        data = message.data
        if message.role == "user":
            answering = False
            blocks += ["## You", safe_markdown(message.content) if message.content.strip() else "_(empty message)_"]
            attached = [f"- attached: {safe_inline(f['name'])}" for f in data.get("files", [])]
            blocks += ["\n".join(attached)] if attached else []
            if message.id in versions:
                number, count = versions[message.id]
                blocks.append(
                    f"_This message was edited: this is version {number} of {count}. The other versions, "
                    "and the answers that followed them, are other branches of the conversation, not in "
                    "this export; switch branches on the page to see them._"
                )
            continue
        if not answering:
            blocks.append("## Assistant")
            answering = True
            if message.id in versions:
                number, count = versions[message.id]
                blocks.append(
                    f"_This answer was regenerated: this is version {number} of {count}; the others are "
                    "other branches of the conversation, not in this export._"
                )
        if message.role == "assistant":
            if message.content.strip():
                blocks.append(safe_markdown(message.content.strip()))
            if data.get("finish_reason") == "error":
                blocks.append(_failure(data.get("error") or {}))
            elif note := _FINISH_NOTES.get(data.get("finish_reason") or ""):
                blocks.append(f"_{note}_")
            continue
        status = "ok" if data.get("ok") else "failed"
        arguments = private.clean(json.dumps(data.get("arguments") or {}, ensure_ascii=False))
        result = private.clean(message.content[:_RESULT_CHARS])
        blocks += [
            f"### Tool {code_span(str(data.get('tool', '')))} ({status})",
            "Arguments:",
            fenced(arguments, "json"),
            "Result:",
            fenced(result),
        ]
        artifacts = [f"- artifact: {safe_inline(a['name'])}" for a in data.get("artifacts", [])]
        blocks += ["\n".join(artifacts)] if artifacts else []
    return "\n\n".join(block.strip("\n") for block in blocks) + "\n"


def _failure(error: ErrorData) -> str:
    """A failed answer, with the reason the page showed."""
    reason = " ".join(part for part in (error.get("message"), error.get("action")) if part)
    return f"> **The answer failed**{': ' + safe_inline(reason) if reason else '.'}"


def export_filename(conversation: Conversation, extension: str) -> tuple[str, str]:
    """(ASCII filename, UTF-8 filename) for the download, from the conversation's title."""
    title = unicodedata.normalize("NFKC", conversation.title or "").strip()
    unicode_name = re.sub(r"[\x00-\x1f\x7f/\\:*?\"<>|]+", " ", title)
    unicode_name = re.sub(r"\s+", " ", unicode_name).strip(" .")[:80] or "conversation"
    ascii_name = unicodedata.normalize("NFKD", unicode_name).encode("ascii", "ignore").decode()
    ascii_name = re.sub(r"[^A-Za-z0-9._ -]+", "", ascii_name)
    ascii_name = re.sub(r"\s+", " ", ascii_name).strip(" .") or "conversation"
    return f"{ascii_name}.{extension}", f"{unicode_name}.{extension}"


class _Scrubber:
    def __init__(self, owner: str, files: dict[str, str]) -> None:
        self._owner, self._files = owner, files

    def clean(self, text: str) -> str:
        text = _SIGNED_LINK.sub(lambda m: f"(attached file {self._files.get(m.group(1), m.group(1))})", text)
        if self._owner:
            text = re.sub(re.escape(self._owner), "(you)", text, flags=re.IGNORECASE)
        return text


def _versions(messages: list[Message]) -> dict[str, tuple[int, int]]:
    """Message id -> (its number, how many versions) among messages with the same parent and role:
    the edits of one message, the regenerations of one answer."""
    siblings: dict[tuple[str | None, str], list[Message]] = defaultdict(list)
    for message in messages:  # in seq order
        siblings[(message.parent_id, message.role)].append(message)
    out: dict[str, tuple[int, int]] = {}
    for group in siblings.values():
        if len(group) > 1:
            out.update((m.id, (i + 1, len(group))) for i, m in enumerate(group))
    return out
