"""Structured logs: one JSON object per line in `logs/app.jsonl`.

Fields come from `extra={...}` on the logging call. Only the fields named in `SAFE_FIELDS` are
written; any other extra is dropped, so a value passed by mistake (a header, a token, a config
entry) cannot reach the file. A test checks that every `extra` key the code uses is listed here:
a new field is added on purpose."""

from __future__ import annotations

import atexit
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from pythonjsonlogger.json import JsonFormatter as _LibraryJsonFormatter

__all__ = [
    "SAFE_FIELDS",
    "ConsoleLines",
    "JsonFormatter",
    "enable_console",
    "flush_logs",
    "quiet_http_parser",
    "quiet_sign_in_errors",
    "setup_logging",
    "skip_call_sites",
]

SAFE_FIELDS = frozenset(
    {
        "after",
        "attempt",
        "before",
        "completion_tokens",
        "delay_s",
        "duration_ms",
        "error",
        "errors",
        "event",
        "exporter",
        "failed",
        "host",
        "model",
        "needs_auth",
        "new",
        "ok",
        "old",
        "origin",
        "path",
        "pin",
        "prompt_tokens",
        "protocol_version",
        "ready",
        "task",
        "ready_after_s",
        "reason",
        "registry",
        "removed",
        "request_id",
        "required_not_ready",
        "server",
        "servers",
        "status",
        "tool",
        "tools",
        "total",
        "trimmed",
        "user",
        "why",
        # the audit log (hashes and signatures are public)
        "seq",
        "hash",
        "ts",
        "signature",
        "through_seq",
        "waiting",
        # MCP Apps
        "app",
        "app_level",
        "app_logger",
        "code",
        "directive",
        "entry",
        "from_app",
        "method",
        "uri",
        # policy hooks
        "decision",
        "hook",
        "point",
    }
)


class JsonFormatter(_LibraryJsonFormatter):
    """python-json-logger's formatter with our field names and only the safe extras."""

    def __init__(self) -> None:
        super().__init__(json_default=str, json_ensure_ascii=False)
        # one encoder for every record (json.dumps with `default` builds one per call)
        self._encoder = json.JSONEncoder(default=str, ensure_ascii=False)
        self._second: tuple[int, str] = (-1, "")  # the last whole second seen, as text

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        second = int(record.created)
        if second != self._second[0]:
            self._second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        log_data["ts"] = f"{self._second[1]}.{int(record.msecs):03d}Z"
        log_data["level"] = record.levelname.lower()
        log_data["logger"] = record.name
        log_data["pid"] = record.process  # tells apart the worker processes sharing this file
        log_data["msg"] = record.getMessage()
        for key in SAFE_FIELDS.intersection(record.__dict__):
            log_data[key] = record.__dict__[key]
        if message_dict.get("exc_info"):
            log_data["exc"] = message_dict["exc_info"]

    def jsonify_log_record(self, log_data: dict[str, Any]) -> str:
        return self._encoder.encode(log_data)


class ConsoleLines(logging.Handler):
    """One human line on the console per change of a server's status, a summary once every
    server has left `starting`, and each config error: what an operator watching
    `switchboard serve` needs, without the JSON log's detail."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(logging.INFO)
        self._stream = stream
        self._last: dict[str, tuple[str, str | None]] = {}

    def _line(self, record: logging.LogRecord) -> str | None:
        event = getattr(record, "event", None)
        if event == "server_status":
            name, status, reason = record.server, record.status, record.reason  # type: ignore[attr-defined]
            if self._last.get(name) == (status, reason):
                return None  # a failed server retrying with the same reason is not news
            self._last[name] = (status, reason)
            if status == "ready":
                tools = getattr(record, "tools", 0)
                after = getattr(record, "ready_after_s", None)
                took = f" in {after:.1f} s" if isinstance(after, int | float) else ""
                return f"server {name} ready{took} ({tools} tool{'s' if tools != 1 else ''})"
            if status == "failed":
                return f"server {name} FAILED: {reason or 'no reason given'}"
            if status == "starting" and reason:
                return f"server {name} {reason}"
            return None
        if event == "server_restart":
            self._last.pop(record.server, None)  # type: ignore[attr-defined]
            return f"server {record.server} restarting"  # type: ignore[attr-defined]
        if event == "servers_settled":
            total, ready, failed = record.total, record.ready, record.failed  # type: ignore[attr-defined]
            line = f"servers: {ready} of {total} ready"
            if failed:
                line += f", {len(failed)} failed ({', '.join(failed)})"
            waiting = getattr(record, "needs_auth", None)
            if waiting:
                line += f", {len(waiting)} waiting for users to sign in ({', '.join(waiting)})"
            missing = getattr(record, "required_not_ready", None)
            if missing:
                line += f"; NOT READY: required server(s) {', '.join(missing)} are not ready"
            return line
        if event == "config_reload_refused":
            return f"CONFIG RELOAD REFUSED (the running configuration stays): {'; '.join(record.errors)}"  # type: ignore[attr-defined]
        if event == "stop_wait":
            return f"stopping: {record.getMessage()}"
        if event == "unhandled_error":
            where = f"{getattr(record, 'method', '?')} {getattr(record, 'path', '?')}"
            kind = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else "error"
            return f"ERROR on {where}: {kind} (request id {getattr(record, 'request_id', '?')}; traceback in app.jsonl)"
        if event == "config_error":
            return f"CONFIG ERROR: {record.getMessage().removeprefix('config error: ')}"
        return None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self._line(record)
            if line is not None:
                stream = self._stream or sys.stderr
                stream.write(line + "\n")
                stream.flush()
        except Exception:
            self.handleError(record)


_CONSOLE_NAME = "switchboard-console"


def enable_console(stream: TextIO | None = None) -> None:
    """Print server status changes and config errors to the console (idempotent)."""
    root = logging.getLogger("switchboard")
    root.setLevel(logging.INFO)
    for handler in list(root.handlers):
        if handler.get_name() == _CONSOLE_NAME:
            root.removeHandler(handler)
    handler = ConsoleLines(stream)
    handler.set_name(_CONSOLE_NAME)
    root.addHandler(handler)


_HANDLER_NAME = "switchboard-jsonl"
_handler: logging.FileHandler | None = None


def setup_logging(log_dir: Path) -> None:
    """Send switchboard's logs to `log_dir/app.jsonl` (idempotent). Each record is formatted and
    written where it is logged, one line with one write: about 10 µs, where handing it to a writer
    thread cost several times that in waking the thread (docs/benchmarks.md); and a line is in the
    file as soon as the call returns."""
    global _handler
    log_dir.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger("switchboard")
    root.setLevel(logging.INFO)
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
            handler.close()
    _handler = logging.FileHandler(log_dir / "app.jsonl", encoding="utf-8")
    _handler.setFormatter(JsonFormatter())
    _handler.set_name(_HANDLER_NAME)
    root.addHandler(_handler)
    # MCP servers' chatter belongs in the log file, not on the operator's console.
    for noisy in ("fastmcp", "mcp", "httpx", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    quiet_sign_in_errors()
    quiet_http_parser()


def skip_call_sites() -> None:
    """Stop looking up each record's file, line and function (`Logger.findCaller`, a walk up the
    stack per record): neither app.jsonl nor the console lines carry them. `stack_info=True` then
    gathers nothing either; no call here asks for it. For the serving process only: a test
    runner's own log report shows call sites. (The logging HOWTO's "Optimization" section.)"""
    logging._srcfile = None


class _NoRemoteText(logging.Filter):
    """The MCP SDK's OAuth module logs `logger.exception(...)` on a bad token or refresh answer;
    the traceback quotes what the authorization server sent (it can hold tokens or anything a
    hostile server chose).  Keep the SDK's own sentence and the exception's type only: the
    host already logs each sign-in failure in its own words (tools/oauth/url_guard.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info or record.exc_text:
            kind = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else "error"
            record.msg, record.args = f"{record.getMessage()} ({kind}; details withheld)", None
            record.exc_info, record.exc_text = None, None
        return True


def quiet_sign_in_errors() -> None:
    """Install `_NoRemoteText` on the SDK's OAuth logger (idempotent)."""
    sdk = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(f, _NoRemoteText) for f in sdk.filters):
        sdk.addFilter(_NoRemoteText())


# Per-request notes of the HTTP parsers about a malformed request, which the client has had its 400
# for: uvicorn's (h11, httptools) on `uvicorn.error` at WARNING, and python-multipart's ("Found
# invalid character 13 in header at 7") on its own logger, which nothing handles, so Python printed
# each one on stderr.
_PARSER_NOISE = frozenset({"Invalid HTTP request received.", "Unsupported upgrade request."})
_MULTIPART_LOGGER = "python_multipart.multipart"


class _ParserNoiseToDebug(logging.Filter):
    def __init__(self, every: bool) -> None:
        super().__init__()
        self._every = every

    def filter(self, record: logging.LogRecord) -> bool:
        if (self._every and record.levelno < logging.ERROR) or record.msg in _PARSER_NOISE:
            logging.getLogger("switchboard.http").debug(
                "malformed request refused by the parser: %s", record.getMessage(), extra={"event": "bad_http"}
            )
            return False
        return True


def quiet_http_parser() -> None:
    """Send the HTTP parsers' per-request warnings to the log at debug level, off the console (idempotent)."""
    for name, every in (("uvicorn.error", False), (_MULTIPART_LOGGER, True)):
        parser = logging.getLogger(name)
        if not any(isinstance(f, _ParserNoiseToDebug) for f in parser.filters):
            parser.addFilter(_ParserNoiseToDebug(every))


def flush_logs() -> None:
    """Write out every record logged so far (each is written as it is logged; this flushes the
    file's buffer, for the end of the app's shutdown)."""
    if _handler is not None:
        _handler.flush()


def _close_log() -> None:
    if _handler is not None:
        _handler.close()


atexit.register(_close_log)
