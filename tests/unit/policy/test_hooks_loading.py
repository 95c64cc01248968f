"""hooks.json: loaded from the defaults' folder then the overrides', validated like mcp.json (the
file, the line and the field of each problem), and broken as a whole by any problem."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from switchboard.config import load_app_config
from switchboard.policy import load_hooks
from switchboard.policy.handlers import CommandHandler
from tests.support.harness import write_config

HOOK = str(Path(__file__).resolve().parents[2] / "support" / "hooks" / "policy.py")


def folders(tmp_path: Path) -> tuple[Path, Path]:
    defaults, overrides = tmp_path / "defaults", tmp_path / "overrides"
    defaults.mkdir()
    overrides.mkdir()
    return defaults, overrides


def test_the_overrides_list_follows_the_defaults_and_python_is_the_apps_interpreter(tmp_path):
    defaults, overrides = folders(tmp_path)
    (defaults / "hooks.json").write_text(
        json.dumps({"hooks": [{"event": "pre_tool", "handler": {"type": "command", "command": ["python", HOOK]}}]})
    )
    (overrides / "check.py").write_text("print('{}')")
    (overrides / "hooks.json").write_text(
        json.dumps(
            {
                "hooks": [
                    {
                        "id": "site-check",
                        "event": "post_tool",
                        "match": {"tools": ["toolbox_*"]},
                        "handler": {"type": "command", "command": ["python", "check.py"], "timeout_s": 1.5},
                        "on_error": "deny",
                    }
                ]
            }
        )
    )
    hooks = load_hooks(defaults, overrides)
    assert not hooks.broken
    assert [h.id for h in hooks.hooks] == ["pre_tool#0", "site-check"]
    handler = hooks.hooks[1].handler
    assert isinstance(handler, CommandHandler)
    assert handler.argv == (sys.executable, str(overrides / "check.py")) and handler.cwd == overrides
    assert handler.timeout_s == 1.5


def test_bad_json_names_the_file_and_line_and_breaks_the_set(tmp_path):
    defaults, overrides = folders(tmp_path)
    (defaults / "hooks.json").write_text(
        json.dumps({"hooks": [{"event": "pre_tool", "handler": {"type": "command", "command": ["python", HOOK]}}]})
    )
    (overrides / "hooks.json").write_text('{"hooks": [\n  {"event": "pre_tool",,}\n]}')
    hooks = load_hooks(defaults, overrides)
    assert hooks.broken and hooks.hooks == []  # the defaults' good hook does not run alone either
    (error,) = hooks.errors
    assert error.file == str(overrides / "hooks.json") and "line 2" in str(error)


def test_an_unknown_event_and_a_missing_command_name_line_and_field(tmp_path):
    defaults, overrides = folders(tmp_path)
    (overrides / "hooks.json").write_text(
        "{\n"
        ' "hooks": [\n'
        '  {"event": "pre_tool", "handler": {"type": "command", "command": ["python", "' + HOOK + '", "allow"]}},\n'
        '  {"event": "before_everything",\n'
        '   "handler": {"type": "command", "command": ["python", "x.py"]}},\n'
        '  {"event": "post_tool", "handler": {"type": "command", "command": ["no-such-program-here"]}},\n'
        '  {"event": "post_tool", "handler": {"type": "http", "url": "ftp://x"}, "colour": "red"}\n'
        " ]\n"
        "}\n"
    )
    hooks = load_hooks(defaults, overrides)
    assert hooks.broken and hooks.hooks == []
    text = "\n".join(str(e) for e in hooks.errors)
    assert ("hooks[1].event" in {e.field for e in hooks.errors}) and "line 4" in text and "unknown event" in text
    assert "hooks[2].handler.command" in {e.field for e in hooks.errors} and "line 6" in text
    assert "not found on PATH" in text
    assert {"hooks[3].colour", "hooks[3].handler.url"} <= {e.field for e in hooks.errors} and "line 7" in text
    assert all(e.field and e.file for e in hooks.errors)


def test_a_broken_hooks_file_is_a_broken_config_file(tmp_path):
    write_config(tmp_path / "defaults")
    (tmp_path / "overrides").mkdir()
    (tmp_path / "overrides" / "hooks.json").write_text('{"hooks": [{"event": "pre_toll"}]}')
    config = load_app_config(tmp_path / "defaults", tmp_path / "overrides", {})
    assert config.hooks.broken
    assert any(e.file.endswith("hooks.json") for e in config.broken_files())
