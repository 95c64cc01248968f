"""The test suite's HTTP LLM double, scripted for benchmarks: every turn is
one tool call then a text answer, decided from the request itself (so any
number of concurrent conversations can share one double).

Run on its own (`python bench/_double.py --tool toolbox_echo`) it serves in
this process and prints its base URL on stdout; the benchmarks start it as a
subprocess so that its work does not share a GIL with the app or the clients.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from typing import Any

import _support  # noqa: F401  (puts the project root on sys.path)
from tests.support.llm_double import LLMDouble, Reply, TextReply, ToolCall, ToolCallReply

__all__ = ["RoutingDouble"]

ANSWER = "The tool answered; here is a short summary of what it said."


class RoutingDouble(LLMDouble):
    """Answers a request whose last message is a tool result with text, any
    other request with a call to `tool`."""

    def __init__(self, tool: str = "toolbox_echo", arguments: str = '{"text": "hello"}', **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tool_reply: Reply = ToolCallReply([ToolCall(tool, arguments)])
        self.text_reply: Reply = TextReply(ANSWER, chunks=3)
        self.keep_requests = True

    def _next_reply(self) -> Reply:
        # The double's ASGI app appends the request and picks its reply with no
        # await in between, so the last request is this one even under load.
        request = self.requests[-1] if self.requests else {}
        if not self.keep_requests:
            self.requests.clear()  # bounded memory for long runs
            self.request_headers.clear()
        messages = request.get("messages") or []
        if messages and messages[-1].get("role") == "tool":
            return self.text_reply
        return self.tool_reply


_WORDS = [
    "the",
    "host",
    "streams",
    "every",
    "token",
    "of",
    "a",
    "long",
    "answer",
    "to",
    "the",
    "page",
    "while",
    "it",
    "renders",
    "markdown",
]


def long_markdown(tokens: int) -> str:
    """Markdown of about `tokens` tokens (a word and its space each, ~5 characters): sections
    with a heading, a paragraph, a list and now and then a code block, as long answers have."""
    out: list[str] = []
    count = 0
    while count < tokens:
        section = len(out)
        out.append(f"## Part {section}\n\n")
        paragraph = [_WORDS[(section + i) % len(_WORDS)] for i in range(60)]
        out.append(" ".join(paragraph) + ".\n\n")
        out.append("".join(f"- item {i}: **{_WORDS[i]}** and `{_WORDS[i + 1]}`\n" for i in range(5)) + "\n")
        if section % 3 == 0:
            out.append("```python\nfor token in answer:\n    render(token)\n```\n\n")
        count += 3 + 60 + 5 * 6 + (8 if section % 3 == 0 else 0)
    return "".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tool", default="toolbox_echo")
    parser.add_argument("--arguments", default='{"text": "hello"}')
    parser.add_argument("--text-only", action="store_true", help="always answer with text (one-round turns)")
    parser.add_argument("--chunk-delay", type=float, default=0.0)
    parser.add_argument("--response-delay", type=float, default=0.0)
    parser.add_argument("--max-seconds", type=float, default=900.0, help="stop by itself after this long")
    parser.add_argument(
        "--answer-tokens",
        type=int,
        default=0,
        help="answer with markdown of this many tokens (~5 characters each), one chunk per token",
    )
    args = parser.parse_args()
    double = RoutingDouble(
        args.tool, args.arguments, chunk_delay_s=args.chunk_delay, response_delay_s=args.response_delay
    )
    double.keep_requests = False
    if args.answer_tokens:
        double.text_reply = TextReply(long_markdown(args.answer_tokens), chunks=args.answer_tokens)
    if args.text_only:
        double.tool_reply = double.text_reply
    with double:
        print(json.dumps({"base_url": double.base_url}), flush=True)
        # Stops when the parent closes our stdin (or dies), or at the deadline.
        deadline = time.monotonic() + args.max_seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([sys.stdin], [], [], min(left, 5.0))
            if readable and not sys.stdin.readline():
                break


if __name__ == "__main__":
    main()
