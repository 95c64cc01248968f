"""`switchboard chat "question"`: a terminal client on `POST /api/chat`.

The answer streams to stdout; tool progress, notices and errors go to stderr;
approvals and a tool's questions are asked on the terminal (stdin) and
answered through `/api/calls/{id}/approval` and `/api/elicitations/{id}`."""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import httpx

__all__ = ["EXIT_CODES", "add_parser", "run"]

ANSWERED, FAILED, USAGE, UNREACHABLE, INTERRUPTED = 0, 1, 2, 3, 130
DEFAULT_URL = "http://127.0.0.1:8000"
EXIT_CODES = f"""exit codes:
  {ANSWERED}    answered
  {FAILED}    the chat was refused, or the answer ended with an error (or was stopped elsewhere)
  {USAGE}    usage error (bad arguments)
  {UNREACHABLE}    cannot connect to Switchboard
  {INTERRUPTED}  interrupted (Ctrl-C): the answer is stopped on the server too

environment: SWITCHBOARD_URL (default {DEFAULT_URL}), SWITCHBOARD_TOKEN (a personal API token, sb_...)"""


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("chat", help="ask a question from the terminal", epilog=EXIT_CODES,
                            description="Ask Switchboard a question: the answer streams to stdout, tool progress\n"
                                        "to stderr, and approvals are asked y/n on the terminal.",
                            formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("question")
    parser.add_argument("--model", help="a model name (default: the server's default model)")
    parser.add_argument("--url", default=os.environ.get("SWITCHBOARD_URL", DEFAULT_URL), help="Switchboard's address")
    parser.add_argument("--token", default=os.environ.get("SWITCHBOARD_TOKEN"), help="a personal API token (sb_...)")
    parser.add_argument("--conversation", metavar="ID", help="continue this conversation (its id is printed after each answer)")
    parser.add_argument("--incognito", action="store_true", help="store nothing of this conversation")
    parser.set_defaults(func=run)


def _sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            yield json.loads("\n".join(data))
            data = []


class _Terminal:
    """Shows one turn's events and answers its questions."""

    def __init__(self, client: httpx.Client, stdin: TextIO, out: TextIO, err: TextIO) -> None:
        self.client, self.stdin, self.out, self.err = client, stdin, out, err
        self.text_ended_line = True
        self.failed = False

    def note(self, text: str) -> None:
        if not self.text_ended_line:
            self.out.write("\n")
            self.out.flush()
            self.text_ended_line = True
        print(text, file=self.err, flush=True)

    def ask(self, prompt: str) -> str:
        self.note(prompt)
        line = self.stdin.readline()  # "" at end of input: counts as no
        return line.strip()

    def show(self, event: dict[str, Any]) -> str | None:
        """Handle one event; the finish reason once the answer is done."""
        kind = event["type"]
        if kind == "token":
            self.out.write(event["text"])
            self.out.flush()
            self.text_ended_line = event["text"].endswith("\n")
        elif kind == "tool_start":
            self.note(f"→ {event['tool']} {json.dumps(event['arguments'], ensure_ascii=False)[:200]}")
        elif kind == "tool_progress":
            total = f"/{event['total']:g}" if event.get("total") else ""
            self.note(f"  … {event['progress']:g}{total} {event.get('message') or ''}".rstrip())
        elif kind == "tool_result":
            mark = "✓" if event["ok"] else "✗"
            detail = "" if event["ok"] else f": {event['content'][:300]}"
            self.note(f"{mark} {event['tool']} ({event.get('duration_ms', 0)} ms){detail}")
        elif kind == "task":  # a background task: its result lands in the conversation later (GET /api/tasks)
            self.note(f"⧗ {event['tool']} runs as background task {event['task_id']} ({event['status']})")
        elif kind == "approval_request":
            self.approve(event)
        elif kind == "elicitation_request":
            self.elicit(event)
        elif kind == "notice":
            self.note(f"note: {event['message']}")
        elif kind == "error":
            self.failed = True
            self.note(f"error: {event['message']}" + (f" ({event['action']})" if event.get("action") else ""))
        elif kind == "message_done":
            if event["finish_reason"] in ("length", "round_limit"):
                self.note("note: the answer was cut short (too long, or too many tool rounds)")
            if event.get("conversation_id"):
                self.note(f"conversation: {event['conversation_id']}")
            return str(event["finish_reason"])
        return None

    def approve(self, event: dict[str, Any]) -> None:
        arguments = json.dumps(event["arguments"], ensure_ascii=False)[:500]
        answer = self.ask(f"? {event['tool']} wants to run with {arguments}\n  {event['reason']}\n  Allow? [y/N]")
        approved = answer.lower() in ("y", "yes")
        self._post(f"/api/calls/{event['call_id']}/approval", {"approved": approved})
        self.note("  allowed" if approved else "  denied")

    def elicit(self, event: dict[str, Any]) -> None:
        fields = (event.get("schema") or {}).get("properties") or {}
        self.note(f"? {event['message']} (an empty first answer declines)")
        content: dict[str, Any] = {}
        for name, spec in fields.items():
            value = self.ask(f"  {name}:")
            if not value and not content:
                self._post(f"/api/elicitations/{event['request_id']}", {"action": "decline"})
                return
            kind = spec.get("type")
            try:
                content[name] = (int(value) if kind == "integer" else float(value) if kind == "number"
                                 else value.lower() in ("y", "yes", "true") if kind == "boolean" else value)  # fmt: skip
            except ValueError:
                content[name] = value  # the server says what is wrong with it
        self._post(f"/api/elicitations/{event['request_id']}", {"action": "accept", "content": content})

    def _post(self, path: str, body: dict[str, Any]) -> None:
        response = self.client.post(path, json=body)
        if response.status_code >= 400:
            self.note(f"error: {_message(response)}")


def _message(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        return error["message"] + (f" ({error['action']})" if error.get("action") else "")
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"


def run(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    stdin, out, err = stdin or sys.stdin, out or sys.stdout, err or sys.stderr
    if not args.question.strip():
        print("error: the question is empty", file=err)
        return USAGE
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    conversation_id = args.conversation or secrets.token_urlsafe(12)  # known up front, so Ctrl-C can stop it
    body: dict[str, Any] = {"content": args.question, "conversation_id": conversation_id, "incognito": args.incognito}
    if args.model:
        body["model"] = args.model
    timeout = httpx.Timeout(30.0, read=None)  # an answer may wait long for a tool
    with httpx.Client(base_url=args.url.rstrip("/"), headers=headers, timeout=timeout) as client:
        terminal = _Terminal(client, stdin, out, err)
        try:
            with client.stream("POST", "/api/chat", json=body) as response:
                if response.status_code != 200:
                    response.read()
                    terminal.note(f"error: {_message(response)}")
                    return FAILED
                for event in _sse(response.iter_lines()):
                    finish = terminal.show(event)
                    if finish is not None:
                        return FAILED if terminal.failed or finish in ("error", "cancelled") else ANSWERED
            terminal.note("error: the answer broke off before it was done")
            return FAILED
        except KeyboardInterrupt:
            terminal.note("interrupted: stopping the answer")
            try:
                client.post(f"/api/conversations/{conversation_id}/cancel", timeout=5)
            except httpx.HTTPError:
                pass
            return INTERRUPTED
        except httpx.TransportError as exc:
            terminal.note(f"error: cannot reach Switchboard at {args.url} ({type(exc).__name__}: {exc})"
                          if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                          else f"error: the connection to Switchboard broke ({type(exc).__name__})")  # fmt: skip
            return UNREACHABLE if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout) else FAILED
