import json
import os
import logging
import time

from switchboard.logs import setup_logging


def read_entries(path, count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return [json.loads(line) for line in lines]
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} log lines in {path}")


def test_log_lines_are_json_with_extras_and_tracebacks(tmp_path):
    setup_logging(tmp_path)
    log = logging.getLogger("switchboard.test")
    log.info("tool %s ran", "echo", extra={"event": "tool_call", "duration_ms": 12})
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("it failed", extra={"event": "turn_failed"})
    first, second = read_entries(tmp_path / "app.jsonl", 2)
    assert first["msg"] == "tool echo ran" and first["event"] == "tool_call" and first["duration_ms"] == 12
    assert first["level"] == "info" and first["ts"].endswith("Z")
    assert first["pid"] == os.getpid()  # tells worker processes apart in one file
    assert second["level"] == "error" and "ValueError: boom" in second["exc"] and second["msg"] == "it failed"
