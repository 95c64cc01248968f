"""Running hooks as real subprocesses: decisions, the order of hooks at one point, and the
failure rules (a hook that times out, crashes or answers nonsense)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from switchboard.policy import RESULT_CAP_CHARS, UNAVAILABLE, Facts, Hooks, load_hooks

HOOK = str(Path(__file__).resolve().parents[2] / "support" / "hooks" / "policy.py")


def hooks_of(tmp_path: Path, *entries: dict) -> Hooks:
    folder = tmp_path / "overrides"
    folder.mkdir(exist_ok=True)
    (folder / "hooks.json").write_text(json.dumps({"hooks": list(entries)}))
    loaded = load_hooks(tmp_path / "none", folder)
    assert not loaded.broken, loaded.errors
    return Hooks(loaded)


def hook(event: str, *args: str, timeout_s: float = 10, **extra) -> dict:
    return {
        "event": event,
        "handler": {"type": "command", "command": ["python", HOOK, *args], "timeout_s": timeout_s},
        **extra,
    }


def facts(**more) -> Facts:
    return Facts(email="a@example.com", groups=("users",), conversation_id="c1", model="m", **more)


TOOL = {"tool": "box_echo", "server": "box", "arguments": {"text": "hi"}}


async def test_a_deny_gives_its_reason_and_ends_the_point(tmp_path):
    record = tmp_path / "seen.jsonl"
    hooks = hooks_of(tmp_path, hook("pre_tool", "deny", "no echo today"), hook("pre_tool", "record", str(record)))
    verdict = await hooks.run("pre_tool", facts(**TOOL))
    assert verdict.denied == "no echo today"
    assert not record.exists()  # the first deny ends the point: the next hook never ran
    (only,) = verdict.records
    assert (only.hook, only.event, only.decision, only.reason) == ("pre_tool#0", "pre_tool", "deny", "no echo today")
    assert only.duration_ms > 0


async def test_exit_status_2_denies_with_stderr_as_the_reason(tmp_path):
    hooks = hooks_of(tmp_path, hook("pre_tool", "exit2", "not on Sundays"))
    assert (await hooks.run("pre_tool", facts(**TOOL))).denied == "not on Sundays"


async def test_modifications_apply_in_order_and_an_ask_stays(tmp_path):
    record = tmp_path / "seen.jsonl"
    hooks = hooks_of(
        tmp_path,
        hook("pre_tool", "ask", "a person should look"),
        hook("pre_tool", "modify_args", '{"text": "changed"}'),
        hook("pre_tool", "record", str(record)),
    )
    verdict = await hooks.run("pre_tool", facts(**TOOL))
    assert verdict.denied is None and verdict.ask == "a person should look"
    assert verdict.arguments == {"text": "changed"}
    assert json.loads(record.read_text())["arguments"] == {"text": "changed"}  # the next hook saw the change
    assert [r.decision for r in verdict.records] == ["ask", "modify", "allow"]


@pytest.mark.parametrize(
    ("mode", "why"),
    [("crash", "exited with status 1"), ("nonsense", "not JSON"), ("bad_decision", "'maybe'")],
)
async def test_a_failing_hook_denies_before_execution_and_is_passed_over_after(tmp_path, mode, why):
    hooks = hooks_of(tmp_path, hook("pre_tool", mode), hook("post_tool", mode))
    before = await hooks.run("pre_tool", facts(**TOOL))
    assert before.denied == UNAVAILABLE
    assert why in (before.records[0].error or "")
    after = await hooks.run("post_tool", facts(**TOOL, result="fine", ok=True))
    assert after.denied is None and after.content is None and after.records[0].error


async def test_a_hook_that_times_out_is_stopped_and_on_error_overrides_the_rule(tmp_path):
    hooks = hooks_of(
        tmp_path,
        hook("pre_tool", "sleep", "30", timeout_s=0.5),
        hook("prompt_submit", "sleep", "30", timeout_s=0.5, on_error="allow"),
        hook("post_tool", "sleep", "30", timeout_s=0.5, on_error="deny"),
    )
    verdict = await hooks.run("pre_tool", facts(**TOOL))
    assert verdict.denied == UNAVAILABLE and "within 0.5 s" in verdict.records[0].error
    assert (await hooks.run("prompt_submit", facts(prompt="hello"))).denied is None
    assert (await hooks.run("post_tool", facts(**TOOL, result="x", ok=True))).denied == UNAVAILABLE


async def test_ask_and_modify_where_they_mean_nothing_are_unreadable(tmp_path):
    hooks = hooks_of(tmp_path, hook("pre_model", "ask", "why not"), hook("permission_request", "modify_args", "{}"))
    assert (await hooks.run("pre_model", facts())).denied == UNAVAILABLE
    assert (await hooks.run("permission_request", facts(**TOOL, reason="r"))).denied == UNAVAILABLE


async def test_match_by_server_tool_glob_and_group(tmp_path):
    hooks = hooks_of(
        tmp_path,
        hook("pre_tool", "deny", "by server", match={"servers": ["other"]}),
        hook("pre_tool", "deny", "by group", match={"groups": ["contractors"]}),
        hook("pre_tool", "deny", "by glob", match={"tools": ["box_e*"]}),
    )
    assert (await hooks.run("pre_tool", facts(**TOOL))).denied == "by glob"
    assert (await hooks.run("pre_tool", facts(tool="box_add", server="box", arguments={}))).denied is None


async def test_a_broken_set_runs_nothing_and_denies_only_before_execution(tmp_path):
    folder = tmp_path / "overrides"
    folder.mkdir()
    (folder / "hooks.json").write_text("{not json")
    hooks = Hooks(load_hooks(tmp_path / "none", folder))
    for point in ("prompt_submit", "pre_model", "pre_tool", "permission_request"):
        assert (await hooks.run(point, facts(**TOOL))).denied == UNAVAILABLE, point
    for point in ("session_start", "post_tool", "turn_end"):
        assert (await hooks.run(point, facts(**TOOL))).denied is None, point


async def test_the_event_is_capped_and_the_child_gets_a_minimal_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-model-key-do-not-leak")
    monkeypatch.setenv("SWITCHBOARD_PROXY_SECRET", "proxy-secret-do-not-leak")
    record, environment = tmp_path / "seen.jsonl", tmp_path / "env.json"
    hooks = hooks_of(
        tmp_path, hook("post_tool", "record", str(record)), hook("post_tool", "environment", str(environment))
    )
    await hooks.run("post_tool", facts(**TOOL, result="x" * (RESULT_CAP_CHARS * 3), ok=True))
    event = json.loads(record.read_text())
    assert len(event["result"]) == RESULT_CAP_CHARS and event["result_truncated"] is True
    assert set(event) == {
        "event",
        "user",
        "conversation_id",
        "compliance_level",
        "model",
        "tool",
        "server",
        "arguments",
        "ok",
        "annotations",
        "result",
        "result_truncated",
    }
    child = json.loads(environment.read_text())
    assert "OPENAI_API_KEY" not in child and "SWITCHBOARD_PROXY_SECRET" not in child
    assert set(child) <= {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"}
    assert os.environ["OPENAI_API_KEY"] not in environment.read_text()


async def test_each_hook_run_is_counted_and_timed_in_the_metrics(tmp_path):
    from switchboard.telemetry import metrics_text

    hooks = hooks_of(
        tmp_path, hook("pre_tool", "deny", "no", id="metrics-probe"), hook("post_tool", "crash", id="crashy")
    )
    await hooks.run("pre_tool", facts(**TOOL))
    await hooks.run("post_tool", facts(**TOOL, result="r", ok=True))
    text = metrics_text().decode()
    assert 'switchboard_hook_runs_total{decision="deny",event="pre_tool",hook="metrics-probe"}' in text
    assert 'switchboard_hook_runs_total{decision="error",event="post_tool",hook="crashy"}' in text
    assert 'switchboard_hook_duration_seconds_count{event="pre_tool"}' in text
