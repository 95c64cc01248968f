"""Structured logs: one JSON object per line in `logs/app.jsonl`.

Fields come from `extra={...}` on the logging call.  Only known-safe fields
are written; config values (env, headers, keys) are never passed to a log
call in the first place."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

__all__ = ["JsonFormatter", "setup_logging"]

_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


_HANDLER_NAME = "switchboard-jsonl"


def setup_logging(log_dir: Path) -> None:
    """Send switchboard's logs to `log_dir/app.jsonl` (idempotent)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    root = logging.getLogger("switchboard")
    root.setLevel(logging.INFO)
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
            handler.close()
    file_handler = logging.FileHandler(log_dir / "app.jsonl", encoding="utf-8")
    file_handler.set_name(_HANDLER_NAME)
    file_handler.setFormatter(JsonFormatter())
    root.addHandler(file_handler)
    # MCP servers' chatter belongs in the log file, not on the operator's console.
    for noisy in ("fastmcp", "mcp", "httpx", "LiteLLM", "litellm"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
