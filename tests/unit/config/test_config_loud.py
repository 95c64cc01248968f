"""A broken config file is a loud failure, and `check-config` says everything wrong at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from switchboard.__main__ import main
from switchboard.config import load_app_config, load_mcp_config


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


@pytest.fixture
def dirs(tmp_path):
    return tmp_path / "defaults", tmp_path / "overrides"


def test_a_json_syntax_error_is_a_broken_file_with_its_line_and_column(dirs):
    defaults, overrides = dirs
    write(defaults, "mcp.json", json.dumps({"servers": {"a": {"command": "x"}}}))
    path = write(overrides, "mcp.json", '{"servers": {\n  "b": {"command": "y"},,\n}}')
    config = load_app_config(defaults, overrides, {})
    assert "a" in config.mcp.servers
    [broken] = config.broken_files()
    assert broken.file == str(path) and "line 2, column 25" in str(broken)


@pytest.mark.parametrize("name", ["llmconfig.yml", "groups.yml"])
def test_a_yaml_syntax_error_names_line_and_column_in_one_line(dirs, name):
    defaults, overrides = dirs
    write(overrides, name, "models:\n  - name: a\n   model: b\n")
    config = load_app_config(defaults, overrides, {})
    [broken] = config.broken_files()
    assert broken.file.endswith(name) and "(line 3, column" in str(broken) and "\n" not in str(broken)


def test_a_whole_file_of_the_wrong_shape_is_broken_too(dirs):
    defaults, overrides = dirs
    write(overrides, "compliance-levels.json", json.dumps(["Public"]))
    assert load_app_config(defaults, overrides, {}).broken_files()


def test_every_bad_field_of_a_server_is_reported_not_only_the_first(dirs):
    defaults, overrides = dirs
    write(
        overrides,
        "mcp.json",
        json.dumps(
            {
                "servers": {
                    "s": {
                        "command": "x",
                        "colour": "red",
                        "timeout_s": -1,
                        "approval": "sometimes",
                        "env": {"K": "${NOPE}"},
                    }
                }
            }
        ),
    )
    error = str(load_mcp_config(defaults, overrides, {}).errors["s"])
    for words in ("4 problems", "'colour': unknown field", "'timeout_s'", "'approval'", "'env.K'", "${NOPE}"):
        assert words in error, (words, error)


def _check(monkeypatch, capsys, defaults, overrides) -> tuple[int, str]:
    monkeypatch.setenv("SWITCHBOARD_DEFAULTS_DIR", str(defaults))
    monkeypatch.setenv("SWITCHBOARD_CONFIG_DIR", str(overrides))
    code = main(["check-config"])
    return code, capsys.readouterr().out


def test_check_config_fails_on_a_broken_file_and_names_file_and_line(dirs, monkeypatch, capsys):
    defaults, overrides = dirs
    write(defaults, "mcp.json", json.dumps({"servers": {}}))
    write(overrides, "mcp.json", '{"servers": {"b": {"command": "python"}}')
    code, out = _check(monkeypatch, capsys, defaults, overrides)
    assert code == 1
    assert f"{overrides / 'mcp.json'}: not valid JSON (line 1, column" in out


def test_check_config_warns_but_passes_when_a_command_is_not_on_path(dirs, monkeypatch, capsys, tmp_path):
    defaults, overrides = dirs
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "run.sh"
    script.write_text("#!/bin/sh\n")
    write(
        defaults,
        "mcp.json",
        json.dumps(
            {
                "servers": {
                    "own_python": {
                        "command": "python3",
                        "args": ["main.py"],
                        "cwd": "backend/mcp/dataviz",
                    },  # project-relative cwd
                    "missing": {"command": "no-such-mcp-server-binary"},
                    "relative": {"command": "./run.sh", "cwd": str(tmp_path / "bin")},
                    "gone": {"command": "python", "cwd": "no/such/folder"},
                    "off": {"command": "also-missing", "enabled": False},
                }
            }
        ),
    )
    code, out = _check(monkeypatch, capsys, defaults, overrides)
    assert code == 0, out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, out
    assert "server 'missing', field 'command': 'no-such-mcp-server-binary' is not on PATH" in warnings[0] + warnings[1]
    assert any("server 'gone', field 'cwd'" in w for w in warnings)
    assert "0 error(s), 2 warning(s)" in out


def test_check_config_labels_a_model_as_a_model_and_counts_broken_entries(dirs, monkeypatch, capsys):
    defaults, overrides = dirs
    write(
        defaults,
        "mcp.json",
        json.dumps({"servers": {"ok": {"command": "python"}, "bad": {"command": "x", "url": "http://x"}}}),
    )
    write(
        defaults,
        "llmconfig.yml",
        "models:\n  - name: demo\n    model: switchboard/demo\n"
        "  - name: local\n    model: openai/llama3\n    temprature: 0.2\n"
        "  - model: openai/unnamed\n",
    )
    code, out = _check(monkeypatch, capsys, defaults, overrides)
    assert code == 1
    assert "model 'local', field 'temprature': unknown field" in out, out
    assert "field 'models[2].name'" in out and "server 'models" not in out, out
    assert "2 server(s) (1 enabled, 1 broken), 3 model(s) (2 broken)," in out, out


def test_check_config_notes_a_server_on_the_deprecated_sse_transport(dirs, monkeypatch, capsys):
    defaults, overrides = dirs
    write(
        defaults,
        "mcp.json",
        json.dumps(
            {
                "servers": {
                    "old_sse": {"url": "http://127.0.0.1:9/sse"},
                    "modern": {"url": "http://127.0.0.1:9/mcp"},
                }
            }
        ),
    )
    code, out = _check(monkeypatch, capsys, defaults, overrides)
    assert code == 0, out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: server 'old_sse', field 'transport': deprecated transport: prefer streamable HTTP"]
