"""The offline demo model `switchboard/demo`: a litellm custom provider.

It needs no LLM and no network. It reads the conversation and the offered tools
(OpenAI format) and:

- after tool results, streams a short markdown summary of them;
- when the user's own words in the last user message name tools (qualified name,
  or the bare name after a one-part server prefix), calls them, with the first JSON
  object in the message as arguments (or `{}`); several named tools are called in
  parallel. What the host appended to the message (the attached-files note,
  resource text) is not the user's and never names a tool;
- otherwise streams a help text listing the tools and how to ask.

When only the tool gateway is offered (a large catalogue), a word of the user's
that looks like a tool name (it has an underscore) is called through
`switchboard_call_tool`; "search WORDS", "list" and "list:SERVER" go to
`switchboard_search_tools`.

Going through litellm's own streaming wrapper keeps the demo on the same code path
as a real provider: the client cannot tell them apart.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import GenericStreamingChunk

__all__ = ["DEMO_PROVIDER", "DemoLLM", "demo_reply"]

DEMO_PROVIDER = "switchboard"

_RESULT_PREVIEW_CHARS = 300
_WORDS_PER_CHUNK = 4
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_FRAMED_RESULT = re.compile(
    r'<tool_result tool="(?P<tool>[^"]*)" status="(?P<status>[a-z]+)">\n?(?P<text>.*?)\n?</tool_result>', re.DOTALL
)
_EXAMPLE = 'run dataviz_describe_csv {"csv_text": "a,b\\n1,2"}'
# Where the host's additions to a user message begin (chat/attachments.py appends them
# after the user's text): the attached-files note and attached resources.
_HOST_ADDITION = re.compile(r'(?:^|\n\n)(?:\[Attached files: |<resource server="|\[resource )')
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])")
_HELP_DESCRIPTION_CHARS = 160
# The host's tool gateway (chat/gateway.py names them; the demo only sees them offered).
_SEARCH, _CALL = "switchboard_search_tools", "switchboard_call_tool"
_SEARCH_ASKED = re.compile(
    r"^\s*(?:search|find)\s+(?P<query>.+)$|^\s*(?P<list>list(?::\S+)?)\s*$", re.IGNORECASE | re.DOTALL
)


class DemoLLM(CustomLLM):
    def __init__(self, *, chunk_delay_s: float = 0.02) -> None:
        super().__init__()
        self.chunk_delay_s = chunk_delay_s

    async def astreaming(  # type: ignore[override]  # litellm passes everything by keyword
        self, model: str, messages: list, *args: Any, **kwargs: Any
    ) -> AsyncIterator[GenericStreamingChunk]:
        tools = (kwargs.get("optional_params") or {}).get("tools") or []
        text, calls = demo_reply(messages, tools)
        for index, piece in enumerate(_word_groups(text)):
            if index and self.chunk_delay_s:
                await asyncio.sleep(self.chunk_delay_s)
            yield _chunk(text=piece)
        for index, (name, arguments) in enumerate(calls):
            tool_use = {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
                "index": index,
            }
            yield _chunk(tool_use=tool_use)
        usage = {
            "prompt_tokens": _rough_tokens(json.dumps(messages, default=str)),
            "completion_tokens": _rough_tokens(text + "".join(a for _, a in calls)),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        yield _chunk(finish_reason="tool_calls" if calls else "stop", usage=usage)


def _chunk(
    *, text: str = "", tool_use: dict | None = None, finish_reason: str = "", usage: dict | None = None
) -> GenericStreamingChunk:
    return GenericStreamingChunk(
        text=text,
        tool_use=tool_use,  # type: ignore[typeddict-item]
        is_finished=bool(finish_reason),
        finish_reason=finish_reason,
        usage=usage,  # type: ignore[typeddict-item]
        index=0,
    )


def demo_reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str]]]:
    """What the demo model answers: (markdown text, [(tool name, JSON arguments)])."""
    if messages and messages[-1].get("role") == "tool":
        return _summarise_tool_results(messages), []
    names = [tool["function"]["name"] for tool in tools if tool.get("function", {}).get("name")]
    user_text = _users_own_text(_text_of(_last_user_message(messages)))
    calls = _named_calls(user_text, names)
    if not calls and _CALL in names:
        calls = _gateway_calls(user_text)
    if calls:
        return "", calls
    return _help_text(tools), []


def _gateway_calls(text: str) -> list[tuple[str, str]]:
    """Through the gateway: search when asked to, else call each tool-like word the user wrote."""
    asked = _SEARCH_ASKED.match(text)
    if asked:
        return [(_SEARCH, json.dumps({"query": (asked["query"] or asked["list"]).strip()}))]
    objects = _json_objects(text)
    prose = text
    for start, end, _ in reversed(objects):
        prose = prose[:start] + " " * (end - start) + prose[end:]
    calls: list[tuple[str, str]] = []
    words = [(m.start(), m.group()) for m in _WORD.finditer(prose) if "_" in m.group().strip("_")]
    for i, (position, word) in enumerate(words):
        until = words[i + 1][0] if i + 1 < len(words) else len(text)
        own = next((raw for start, _, raw in objects if position < start < until), None)
        if own is None and len(words) == 1 and objects:
            own = objects[0][2]
        calls.append((_CALL, json.dumps({"name": word, "arguments": json.loads(own or "{}")})))
    return calls


# -- tool results ---------------------------------------------------------------
def _summarise_tool_results(messages: list[dict[str, Any]]) -> str:
    start = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    names: dict[str, str] = {}
    lines: list[str] = []
    for message in messages[start + 1 :]:
        for call in message.get("tool_calls") or []:
            names[call.get("id", "")] = call.get("function", {}).get("name", "")
        if message.get("role") != "tool":
            continue
        name = message.get("name") or names.get(message.get("tool_call_id", ""), "")
        content = _text_of(message).strip()
        framed = _FRAMED_RESULT.match(content)
        if framed:  # the chat loop's framing: <tool_result tool=".." status="..">text</tool_result>
            # the frame names the tool that ran (through the gateway: the underlying one)
            name, status, content = framed["tool"] or name, framed["status"], framed["text"].strip()
        else:
            status = "error" if _looks_failed(content) else "ok"
        name = name or "tool"
        preview = content[:_RESULT_PREVIEW_CHARS] + ("…" if len(content) > _RESULT_PREVIEW_CHARS else "")
        preview = preview.replace("\n", " ") or "(empty result)"
        lines.append(f"- `{name}` — **{status}**: {preview}")
    count = len(lines)
    head = f"Demo model: {count} tool result{'s' if count != 1 else ''}:"
    return head + "\n\n" + "\n".join(lines) + "\n\nName another tool to call it, or ask *what can you do*."


def _looks_failed(content: str) -> bool:
    """The demo model's reading of a result: JSON with `"ok": false` or an `"error"`
    key, or text that starts with "error"."""
    try:
        data = json.loads(content)
    except ValueError:
        return content.lower().startswith(("error", "tool error"))
    return isinstance(data, dict) and (data.get("ok") is False or bool(data.get("error")))


# -- naming tools -------------------------------------------------------------
def _named_calls(text: str, tool_names: list[str]) -> list[tuple[str, str]]:
    objects = _json_objects(text)
    prose = text
    for start, end, _ in reversed(objects):  # do not read tool names inside arguments
        prose = prose[:start] + " " * (end - start) + prose[end:]
    mentions: list[tuple[int, str]] = []
    for match in _WORD.finditer(prose):
        tool = _tool_for_word(match.group(), tool_names)
        if tool and tool not in (name for _, name in mentions):
            mentions.append((match.start(), tool))
    if len(mentions) == 1:
        return [(mentions[0][1], objects[0][2] if objects else "{}")]
    calls = []
    for i, (position, tool) in enumerate(mentions):
        until = mentions[i + 1][0] if i + 1 < len(mentions) else len(text)
        own = next((raw for start, _, raw in objects if position < start < until), "{}")
        calls.append((tool, own))
    return calls


def _users_own_text(text: str) -> str:
    """The user's words: the message up to where the host's additions begin."""
    addition = _HOST_ADDITION.search(text)
    return text[: addition.start()] if addition else text


def _tool_for_word(word: str, tool_names: list[str]) -> str | None:
    """The tool a word names: its qualified name, else its bare name after a one-part
    server prefix (`server_word`). Any other tail of a name is not a name: "text" does
    not name `pdfbasic_extract_pdf_text`. An ambiguous word names nothing."""
    if word in tool_names:
        return word
    bare = [name for name in tool_names if name.endswith("_" + word) and "_" not in name[: -len(word) - 1]]
    return bare[0] if len(bare) == 1 else None


def _json_objects(text: str) -> list[tuple[int, int, str]]:
    """Every top-level JSON object in free text, as (start, end, compact JSON)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, str]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append((position, end, json.dumps(value)))
        position = text.find("{", end)
    return found


# -- help ------------------------------------------------------------------------
def _help_text(tools: list[dict[str, Any]]) -> str:
    lines = [
        "I am the **offline demo model** (`switchboard/demo`): no LLM is configured, so I do not "
        "understand free text. I call the tools you name and summarise their results.",
        "",
    ]
    if tools:
        lines += ["**Available tools**", ""]
        for tool in tools:
            function = tool.get("function", {})
            summary = _first_sentence(function.get("description") or "")
            lines.append(f"- `{function.get('name', '?')}`" + (f" — {summary}" if summary else ""))
    else:
        lines.append("No tools are available in this conversation.")
    if any(tool.get("function", {}).get("name") == _CALL for tool in tools):
        lines += [
            "",
            "Many tools sit behind the **tool gateway**: write `list`, `list:SERVER` or "
            "`search WORDS` to find them, then name one to call it.",
        ]
    lines += [
        "",
        "**How to ask**: name a tool (its full name, or the part after the server prefix) "
        "and give its arguments as one JSON object, for example:",
        "",
        f"`{_EXAMPLE}`",
        "",
        "Name several tools to call them in parallel. An administrator can configure a real model in `llmconfig.yml`.",
    ]
    return "\n".join(lines)


def _first_sentence(description: str) -> str:
    """A description's first sentence (descriptions are often wrapped over several
    lines); a long one is cut at a word boundary, with an ellipsis."""
    paragraph = " ".join(description.strip().split("\n\n", 1)[0].split())
    sentence = _SENTENCE_END.split(paragraph, 1)[0]
    if len(sentence) <= _HELP_DESCRIPTION_CHARS:
        return sentence
    cut = sentence[: _HELP_DESCRIPTION_CHARS + 1].rsplit(" ", 1)[0] if " " in sentence else sentence
    return cut[:_HELP_DESCRIPTION_CHARS].rstrip(" ,;:-—") + "…"


# -- helpers ---------------------------------------------------------------------
def _last_user_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return next((m for m in reversed(messages) if m.get("role") == "user"), {})


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _word_groups(text: str) -> list[str]:
    words = re.findall(r"\s*\S+", text)
    return ["".join(words[i : i + _WORDS_PER_CHUNK]) for i in range(0, len(words), _WORDS_PER_CHUNK)]


def _rough_tokens(text: str) -> int:
    return max(1, len(text) // 4)
