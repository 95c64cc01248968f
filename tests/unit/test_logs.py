import json
import logging
import os
from pathlib import Path

from switchboard.logs import setup_logging


def read_entries(path, count):
    """The file's lines, read at once: a record is written when its logging call returns."""
    lines = path.read_text().splitlines() if path.exists() else []
    assert len(lines) >= count, f"fewer than {count} log lines in {path}"
    return [json.loads(line) for line in lines]


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


def test_timestamps_are_utc_to_the_millisecond_across_seconds():
    # the formatter keeps the text of the last whole second; a record in the next one gets its own
    from switchboard.logs import JsonFormatter

    formatter = JsonFormatter()
    log = logging.getLogger("switchboard.test")
    stamps = []
    for created in (1764154799.875, 1764154800.0, 1764154800.25, 1764154799.5):  # exact in binary
        record = log.makeRecord(
            "switchboard.test",
            logging.INFO,
            __file__,
            1,
            "tick",
            (),
            None,
            extra={"event": "x", "path": Path("/srv/a b"), "errors": ["é"]},
        )
        record.created, record.msecs = created, (created - int(created)) * 1000
        entry = json.loads(formatter.format(record))
        stamps.append(entry["ts"])
        assert entry["path"] == "/srv/a b" and entry["errors"] == ["é"]  # not JSON: written as text; UTF-8 kept
    assert stamps == [
        "2025-11-26T10:59:59.875Z",
        "2025-11-26T11:00:00.000Z",
        "2025-11-26T11:00:00.250Z",
        "2025-11-26T10:59:59.500Z",
    ]
    assert "é" in formatter.format(record)  # not escaped


def test_only_known_safe_fields_are_written(tmp_path):
    setup_logging(tmp_path)
    log = logging.getLogger("switchboard.test")
    log.warning(
        "refused",
        extra={
            "event": "tool_refused",
            "user": "a@example.com",
            "headers": {"Authorization": "Bearer s3cret"},
            "api_key": "sk-live",
        },
    )
    (entry,) = [e for e in read_entries(tmp_path / "app.jsonl", 1) if e["msg"] == "refused"]
    assert entry["event"] == "tool_refused" and entry["user"] == "a@example.com"
    assert "headers" not in entry and "api_key" not in entry
    assert "s3cret" not in (tmp_path / "app.jsonl").read_text()


def test_every_extra_field_the_code_logs_is_listed_as_safe():
    """A new field is added to SAFE_FIELDS on purpose; otherwise it would be dropped silently."""
    import ast
    from pathlib import Path

    from switchboard.logs import SAFE_FIELDS

    package = Path(__file__).resolve().parents[2] / "backend"
    used: dict[str, str] = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                        for key in keyword.value.keys:
                            assert isinstance(key, ast.Constant), f"{path}:{node.lineno}: name log fields literally"
                            used.setdefault(key.value, f"{path.name}:{node.lineno}")
    unlisted = {key: where for key, where in used.items() if key not in SAFE_FIELDS}
    assert not unlisted, f"log fields not in logs.SAFE_FIELDS: {unlisted}"


def test_the_sdk_sign_in_errors_keep_no_remote_text(tmp_path, caplog):
    """The SDK logs `logger.exception` on a bad token answer; the traceback would quote it."""
    setup_logging(tmp_path)
    sdk = logging.getLogger("mcp.client.auth.oauth2")
    try:
        raise ValueError('invalid token response: {"access_token": "at-s3cret", "refresh_token": "rt-s3cret"}')
    except ValueError:
        sdk.exception("Invalid refresh response")
    (record,) = [r for r in caplog.records if r.name == "mcp.client.auth.oauth2"]
    assert record.getMessage() == "Invalid refresh response (ValueError; details withheld)"
    assert record.exc_info is None and "s3cret" not in caplog.text
