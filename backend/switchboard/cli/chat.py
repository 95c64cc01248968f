"""`switchboard chat "question"`: a terminal client on `POST /api/chat`.

The answer streams to stdout; tool progress, notices and errors go to stderr;
approvals and a tool's questions are asked on the terminal (stdin) and
answered through `/api/calls/{id}/approval` and `/api/elicitations/{id}`.
The stream is read with httpx-sse, and each event into the server's own typed
models (`chat/events.py`), so a new kind of event is one the type checker
makes this client handle too."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections.abc import Iterator
from typing import Any, TextIO, assert_never

import httpx
from httpx_sse import EventSource, SSEError, connect_sse
from pydantic import ValidationError

from ..chat.events import (
    PAGE_ONLY,
    ApprovalRequest,
    ElicitationRequest,
    ErrorEvent,
    MessageDone,
    NoticeEvent,
    ServerEvent,
    TaskEvent,
    TokenEvent,
    ToolProgress,
    ToolResultEvent,
    ToolStart,
    event_from_json,
)
from .chat_args import ANSWERED, FAILED, INTERRUPTED, UNREACHABLE, USAGE

__all__ = ["ANSWERED", "FAILED", "INTERRUPTED", "UNREACHABLE", "USAGE", "run"]


def _events(source: EventSource) -> Iterator[ServerEvent]:
    """The turn's events; an event of a kind this client does not know (a newer server's) is skipped."""
    for sse in source.iter_sse():
        if not sse.data:
            continue
        try:
            yield event_from_json(sse.data)
        except ValidationError:
            continue


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

    def show(self, event: ServerEvent) -> str | None:
        """Handle one event; the finish reason once the answer is done."""
        if isinstance(event, PAGE_ONLY):
            return None  # a terminal shows the text, not the page's extras
        match event:
            case TokenEvent():
                self.out.write(event.text)
                self.out.flush()
                self.text_ended_line = event.text.endswith("\n")
            case ToolStart():
                self.note(f"→ {event.tool} {json.dumps(event.arguments, ensure_ascii=False)[:200]}")
            case ToolProgress():
                total = f"/{event.total:g}" if event.total else ""
                self.note(f"  … {event.progress:g}{total} {event.message or ''}".rstrip())
            case ToolResultEvent():
                mark = "✓" if event.ok else "✗"
                detail = "" if event.ok else f": {event.content[:300]}"
                self.note(f"{mark} {event.tool} ({event.duration_ms} ms){detail}")
            case TaskEvent():  # a background task: its result lands in the conversation later (GET /api/tasks)
                self.note(f"⧗ {event.tool} runs as background task {event.task_id} ({event.status})")
            case ApprovalRequest():
                self.approve(event)
            case ElicitationRequest():
                self.elicit(event)
            case NoticeEvent():
                self.note(f"note: {event.message}")
            case ErrorEvent():
                self.failed = True
                self.note(f"error: {event.message}" + (f" ({event.action})" if event.action else ""))
            case MessageDone():
                if event.finish_reason in ("length", "round_limit"):
                    self.note("note: the answer was cut short (too long, or too many tool rounds)")
                if event.conversation_id:
                    self.note(f"conversation: {event.conversation_id}")
                return event.finish_reason
            case _:
                assert_never(event)
        return None

    def approve(self, event: ApprovalRequest) -> None:
        arguments = json.dumps(event.arguments, ensure_ascii=False)[:500]
        answer = self.ask(f"? {event.tool} wants to run with {arguments}\n  {event.reason}\n  Allow? [y/N]")
        approved = answer.lower() in ("y", "yes")
        self._post(f"/api/calls/{event.call_id}/approval", {"approved": approved})
        self.note("  allowed" if approved else "  denied")

    def elicit(self, event: ElicitationRequest) -> None:
        fields = event.schema_.get("properties") or {}
        self.note(f"? {event.message} (an empty first answer declines)")
        content: dict[str, Any] = {}
        for name, spec in fields.items():
            value = self.ask(f"  {name}:")
            if not value and not content:
                self._post(f"/api/elicitations/{event.request_id}", {"action": "decline"})
                return
            kind = spec.get("type")
            try:
                content[name] = (
                    int(value)
                    if kind == "integer"
                    else float(value)
                    if kind == "number"
                    else value.lower() in ("y", "yes", "true")
                    if kind == "boolean"
                    else value
                )
            except ValueError:
                content[name] = value  # the server says what is wrong with it
        self._post(f"/api/elicitations/{event.request_id}", {"action": "accept", "content": content})

    def _post(self, path: str, body: dict[str, Any]) -> None:
        response = self.client.post(path, json=body)
        if response.status_code >= 400:
            self.note(f"error: {_message(response)}")


def _message(response: httpx.Response) -> str:
    try:
        error = response.json()["error"]
        return str(error["message"]) + (f" ({error['action']})" if error.get("action") else "")
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"


def run(
    args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
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
            with connect_sse(client, "POST", "/api/chat", json=body) as source:
                if source.response.status_code != 200:
                    source.response.read()
                    terminal.note(f"error: {_message(source.response)}")
                    return FAILED
                for event in _events(source):
                    finish = terminal.show(event)
                    if finish is not None:
                        return FAILED if terminal.failed or finish in ("error", "cancelled") else ANSWERED
            terminal.note("error: the answer broke off before it was done")
            return FAILED
        except SSEError as exc:  # a 200 that is not an event stream: not Switchboard, or a proxy's page
            terminal.note(f"error: {args.url} did not answer with an event stream ({exc})")
            return FAILED
        except KeyboardInterrupt:
            terminal.note("interrupted: stopping the answer")
            try:
                client.post(f"/api/conversations/{conversation_id}/cancel", timeout=5)
            except httpx.HTTPError:
                pass
            return INTERRUPTED
        except httpx.TransportError as exc:
            terminal.note(
                f"error: cannot reach Switchboard at {args.url} ({type(exc).__name__}: {exc})"
                if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                else f"error: the connection to Switchboard broke ({type(exc).__name__})"
            )
            return UNREACHABLE if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout) else FAILED
