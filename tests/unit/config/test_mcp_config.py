import json

import pytest

from switchboard.config import load_app_config, load_mcp_config


def write(folder, data, name="mcp.json"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.fixture
def dirs(tmp_path):
    return tmp_path / "defaults", tmp_path / "overrides"


def test_overrides_replace_defaults_server_by_server(dirs):
    defaults, overrides = dirs
    write(defaults, {"servers": {"a": {"command": "python", "args": ["a.py"]}, "b": {"command": "python"}}})
    write(overrides, {"servers": {"a": {"url": "http://127.0.0.1:9/mcp"}, "c": {"url": "http://x/sse"}}})
    config = load_mcp_config(defaults, overrides, {})
    assert set(config.servers) == {"a", "b", "c"}
    assert config.servers["a"].transport == "http" and config.servers["a"].command is None
    assert config.servers["b"].transport == "stdio"
    assert config.servers["c"].transport == "sse"
    assert not config.errors


def test_enabled_false_switches_a_default_off(dirs):
    defaults, overrides = dirs
    write(defaults, {"servers": {"a": {"command": "python"}}})
    write(overrides, {"servers": {"a": {"enabled": False}}})
    config = load_mcp_config(defaults, overrides, {})
    assert config.servers["a"].enabled is False
    assert not config.errors


def test_mcpservers_key_from_pasted_snippets_works(dirs):
    defaults, overrides = dirs
    write(defaults, {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}})
    config = load_mcp_config(defaults, overrides, {})
    assert config.servers["time"].args == ["mcp-server-time"]


@pytest.mark.parametrize(
    ("entry", "transport"),
    [
        ({"url": "https://h/mcp"}, "http"),
        ({"url": "https://h/sse"}, "sse"),
        ({"url": "https://h/sse/?x=1"}, "sse"),
        ({"url": "https://h/sse", "type": "http"}, "http"),
        ({"url": "https://h/x", "transport": "streamable-http"}, "http"),
        ({"command": "node"}, "stdio"),
    ],
)
def test_transport_detection(dirs, entry, transport):
    defaults, overrides = dirs
    write(defaults, {"servers": {"s": entry}})
    assert load_mcp_config(defaults, overrides, {}).servers["s"].transport == transport


def test_variables_are_expanded_from_the_environment(dirs):
    defaults, overrides = dirs
    write(
        defaults,
        {
            "servers": {
                "s": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "env": {}},
                "t": {"command": "x", "env": {"A": "${MISSING:-fallback}"}},
            }
        },
    )
    config = load_mcp_config(defaults, overrides, {"HOST": "h.example", "TOKEN": "t0k"})
    assert config.servers["s"].url == "https://h.example/mcp"
    assert config.servers["s"].headers == {"Authorization": "Bearer t0k"}
    assert config.servers["t"].env == {"A": "fallback"}


def test_a_missing_variable_names_server_and_field_and_spares_the_others(dirs):
    defaults, overrides = dirs
    path = write(defaults, {"servers": {"bad": {"command": "x", "env": {"KEY": "${NOPE}"}}, "good": {"command": "y"}}})
    config = load_mcp_config(defaults, overrides, {})
    assert "good" in config.servers and "bad" not in config.servers
    message = str(config.errors["bad"])
    assert str(path) in message and "'bad'" in message and "env.KEY" in message and "NOPE" in message


@pytest.mark.parametrize(
    ("entry", "field", "words"),
    [
        ({"command": "x", "colour": "red"}, "colour", "unknown field"),
        ({"command": "x", "timeout_s": "soon"}, "timeout_s", "number"),
        ({"command": "x", "timeout_s": -1}, "timeout_s", "greater than 0"),
        ({"command": "x", "url": "http://h/mcp"}, "", "cannot both be set"),
        ({"description": "nothing to run"}, "", "set 'command'"),
        ({"command": "x", "approval": "sometimes"}, "approval", "never"),
        ({"command": "x", "trust": "always"}, "trust", "'auto' or 'review'"),
        ({"command": "x", "groups": "users"}, "groups", "list"),
        ({"url": "http://h/x", "transport": "stdio"}, "", "needs 'command'"),
    ],
)
def test_validation_errors_name_file_server_and_field(dirs, entry, field, words):
    defaults, overrides = dirs
    path = write(overrides, {"servers": {"srv": entry, "fine": {"command": "ok"}}})
    config = load_mcp_config(defaults, overrides, {})
    assert "fine" in config.servers
    error = config.errors["srv"]
    assert error.file == str(path) and error.server == "srv"
    assert error.field == field
    assert words in str(error)


def test_broken_json_is_a_file_error(dirs):
    defaults, overrides = dirs
    write(defaults, {"servers": {"a": {"command": "x"}}})
    write(overrides, "{not json")
    config = load_mcp_config(defaults, overrides, {})
    assert "a" in config.servers
    assert "not valid JSON" in str(config.file_errors[0])


def test_fractional_timeouts_and_fields_parse(dirs):
    defaults, overrides = dirs
    write(
        defaults,
        {
            "servers": {
                "a": {
                    "command": "x",
                    "timeout_s": 0.5,
                    "tools": {"deny": ["rm"]},
                    "require_approval": ["w"],
                    "roots": ["/tmp"],
                    "sampling": False,
                }
            }
        },
    )
    server = load_mcp_config(defaults, overrides, {}).servers["a"]
    assert server.timeout_s == 0.5 and server.tools.admits("ls") and not server.tools.admits("rm")
    assert server.sampling == "deny" and server.roots == ["/tmp"]


def test_app_config_merges_models_and_reads_groups_and_levels(tmp_path):
    defaults, overrides = tmp_path / "d", tmp_path / "o"
    write(defaults, {"servers": {}})
    write(defaults, "default_model: demo\nmodels:\n  - {name: demo, model: switchboard/demo}\n", "llmconfig.yml")
    write(overrides, "models:\n  - {name: gpt, model: openai/gpt-4o, api_key_env: K}\n", "llmconfig.yml")
    write(defaults, 'users:\n  "*@example.com": [users]\n  alice@example.com: [research]\n', "groups.yml")
    write(
        defaults,
        {"levels": [{"name": "Internal", "allowed_with": ["Public"]}, {"name": "Public"}]},
        "compliance-levels.json",
    )
    config = load_app_config(defaults, overrides, {})
    assert [m.name for m in config.llm.models] == ["demo", "gpt"]
    assert config.llm.default_model == "demo"
    assert config.groups.groups_for("Alice@Example.com") == ["users", "research"]
    assert config.groups.groups_for("bob@other.org") == []
    assert config.compliance.admits("Internal", "Public") and not config.compliance.admits("Public", "Internal")
    assert config.compliance.admits(None, "Internal") and config.compliance.admits("Public", None)
    assert not config.all_errors()


def test_shipped_defaults_are_valid():
    from switchboard.settings import PROJECT_ROOT

    config = load_app_config(PROJECT_ROOT / "config" / "defaults", PROJECT_ROOT / "config" / "no-overrides", {})
    assert not config.all_errors()
    assert {"pdfbasic", "dataviz"} <= set(config.mcp.servers)


def test_example_snippets_are_valid(tmp_path):
    from switchboard.settings import PROJECT_ROOT

    examples = sorted((PROJECT_ROOT / "config" / "examples").glob("*.json"))
    assert examples, "config/examples has no snippets"
    for example in examples:
        overrides = tmp_path / example.stem
        write(overrides, json.loads(example.read_text()))
        config = load_mcp_config(tmp_path / "none", overrides, {"HOME": "/tmp", "PWD": "/tmp"})
        assert not config.errors and not config.file_errors, (example.name, config.errors)
        assert config.servers, example.name


def test_file_type_patterns_match_names_and_types(dirs):
    defaults, overrides = dirs
    write(defaults, {"servers": {"s": {"command": "x", "file_types": ["application/pdf", "text/*", ".csv"]}}})
    server = load_mcp_config(defaults, overrides, {}).servers["s"]
    assert server.handles_file("a.PDF", "application/pdf")
    assert server.handles_file("notes", "text/plain")
    assert server.handles_file("data.csv", "application/octet-stream")
    assert not server.handles_file("img.png", "image/png")


def test_trust_is_auto_unless_review_is_asked(dirs):
    defaults, overrides = dirs
    write(overrides, {"servers": {"plain": {"command": "x"}, "vetted": {"command": "x", "trust": "review"}}})
    servers = load_mcp_config(defaults, overrides, {}).servers
    assert (servers["plain"].trust, servers["vetted"].trust) == ("auto", "review")
