"""llmconfig.yml settings of the tool gateway: per model and for the whole file."""

from __future__ import annotations

from pathlib import Path

from switchboard.config import load_app_config


def write(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "llmconfig.yml").write_text(text)


def test_the_threshold_and_exposure_are_read_and_an_override_wins(tmp_path):
    write(
        tmp_path / "defaults",
        "gateway_threshold_tokens: 9000\nmodels:\n  - {name: a, model: openai/a}\n"
        "  - {name: b, model: openai/b, tool_exposure: gateway, gateway_threshold_tokens: 10}\n",
    )
    write(tmp_path / "overrides", "gateway_threshold_tokens: 2500\n")

    config = load_app_config(tmp_path / "defaults", tmp_path / "overrides", {})

    assert not config.all_errors()
    assert config.llm.gateway_threshold_tokens == 2500
    a, b = config.llm.models
    assert (a.tool_exposure, a.gateway_threshold_tokens) == ("auto", None)
    assert (b.tool_exposure, b.gateway_threshold_tokens) == ("gateway", 10)


def test_bad_values_are_reported_and_the_defaults_stay(tmp_path):
    write(
        tmp_path / "defaults",
        "gateway_threshold_tokens: lots\nmodels:\n  - {name: a, model: openai/a}\n"
        "  - {name: b, model: openai/b, tool_exposure: sometimes}\n",
    )

    config = load_app_config(tmp_path / "defaults", tmp_path / "overrides", {})

    messages = " ".join(str(e) for e in config.all_errors())
    assert "gateway_threshold_tokens" in messages and "tool_exposure" in messages
    assert config.llm.gateway_threshold_tokens == 4000 and [m.name for m in config.llm.models] == ["a"]
