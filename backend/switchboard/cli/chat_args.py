"""The `switchboard chat` command's arguments and exit codes, apart from the client itself
(`cli/chat.py`): every other command builds this parser too, and must not pay for the client's
imports (httpx, the event models) to do so; `switchboard serve` starts sooner without them."""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["ANSWERED", "DEFAULT_URL", "EXIT_CODES", "FAILED", "INTERRUPTED", "UNREACHABLE", "USAGE", "add_parser"]

ANSWERED, FAILED, USAGE, UNREACHABLE, INTERRUPTED = 0, 1, 2, 3, 130
DEFAULT_URL = "http://127.0.0.1:8000"
EXIT_CODES = f"""exit codes:
  {ANSWERED}    answered
  {FAILED}    the chat was refused, or the answer ended with an error (or was stopped elsewhere)
  {USAGE}    usage error (bad arguments)
  {UNREACHABLE}    cannot connect to Switchboard
  {INTERRUPTED}  interrupted (Ctrl-C): the answer is stopped on the server too

environment: SWITCHBOARD_URL (default {DEFAULT_URL}), SWITCHBOARD_TOKEN (a personal API token, sb_...)"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """The `chat` subcommand's parser (its `func` is set by the caller: `cli_chat.run`)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "chat",
        help="ask a question from the terminal",
        epilog=EXIT_CODES,
        description="Ask Switchboard a question: the answer streams to stdout, tool progress\n"
        "to stderr, and approvals are asked y/n on the terminal.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("question")
    parser.add_argument("--model", help="a model name (default: the server's default model)")
    parser.add_argument("--url", default=os.environ.get("SWITCHBOARD_URL", DEFAULT_URL), help="Switchboard's address")
    parser.add_argument("--token", default=os.environ.get("SWITCHBOARD_TOKEN"), help="a personal API token (sb_...)")
    parser.add_argument(
        "--conversation", metavar="ID", help="continue this conversation (its id is printed after each answer)"
    )
    parser.add_argument("--incognito", action="store_true", help="store nothing of this conversation")
    return parser
