"""The worked examples of docs/policy.md, run for real: the blocklist/redaction script as a
command hook, the OPA-style decision service as an http hook (a real server process), and the
Cedar policies; and an http hook that does not answer in time."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from switchboard.policy import UNAVAILABLE, Facts, Hooks, load_hooks
from tests.support.harness import free_port, wait_for_port

EXAMPLES = Path(__file__).resolve().parents[3] / "config" / "examples" / "hooks"


def site(tmp_path: Path, url: str = "http://127.0.0.1:8181/v1/data/switchboard/decision") -> Hooks:
    """The example as an operator installs it: hooks.json and its folder copied into the overrides."""
    overrides = tmp_path / "overrides"
    shutil.copytree(EXAMPLES, overrides / "hooks")
    text = (EXAMPLES / "hooks.json").read_text().replace("http://127.0.0.1:8181/v1/data/switchboard/decision", url)
    (overrides / "hooks.json").write_text(text)
    loaded = load_hooks(tmp_path / "none", overrides)
    assert not loaded.broken, loaded.errors
    return Hooks(loaded)


def facts(tool: str, groups=("users",), level: str | None = None, **more) -> Facts:
    return Facts(
        email="a@example.com",
        groups=groups,
        conversation_id="c",
        compliance_level=level,
        tool=tool,
        server=tool.split("_")[0],
        **more,
    )


@pytest.fixture(scope="module")
def policy_service():
    port = free_port()
    process = subprocess.Popen([sys.executable, str(EXAMPLES / "policy_server.py"), "--port", str(port)])
    try:
        wait_for_port(port, process, "the policy service")
        yield f"http://127.0.0.1:{port}/v1/data/switchboard/decision"
    finally:
        process.terminate()
        process.wait(10)


async def test_the_blocklist_denies_and_the_redaction_rewrites(tmp_path, policy_service):
    hooks = site(tmp_path, policy_service)
    denied = await hooks.run("pre_tool", facts("files_delete_all", arguments={}))
    assert denied.denied == "the tool files_delete_all is blocked at this site"
    changed = await hooks.run("pre_tool", facts("mail_draft", arguments={"body": "key sk-abcdefghijklmnopqrstuvwx ok"}))
    assert changed.denied is None and changed.arguments == {"body": "key [api key] ok"}
    result = await hooks.run("post_tool", facts("db_query", result="card 4111 1111 1111 1111 paid", ok=True))
    assert result.content == "card [card number] paid"
    prompt = await hooks.run("prompt_submit", Facts(email="a@example.com", prompt="my card is 4111111111111111"))
    assert prompt.prompt == "my card is [card number]"


async def test_the_policy_service_decides_by_rule(tmp_path, policy_service):
    hooks = site(tmp_path, policy_service)
    assert (await hooks.run("pre_tool", facts("search_web", level="Internal", arguments={}))).denied == (
        "web search is off in Internal conversations"
    )
    assert (await hooks.run("pre_tool", facts("search_web", level="Public", arguments={}))).denied is None
    asked = await hooks.run("pre_tool", facts("mail_send_message", arguments={}))
    assert asked.ask == "sending leaves the company: check it"
    # OPA's own body and answer shape
    import httpx

    answer = httpx.post(policy_service, json={"input": {"event": "pre_tool", "tool": "x_drop_table", "user": {}}})
    assert answer.json() == {"result": {"decision": "deny", "reason": "deleting is for administrators"}}


async def test_the_cedar_policies_forbid_destructive_tools_to_non_administrators(tmp_path, policy_service):
    hooks = site(tmp_path, policy_service)
    destructive = {"destructiveHint": True}
    verdict = await hooks.run("pre_tool", facts("db_wipe", arguments={}, annotations=destructive))
    assert verdict.denied is not None and "Cedar policy" in verdict.denied
    admin = await hooks.run(
        "pre_tool", facts("db_wipe", groups=("users", "admin"), arguments={}, annotations=destructive)
    )
    assert admin.denied is None
    assert [r.hook for r in admin.records] == ["blocklist", "policy-service", "cedar"]


async def test_an_http_hook_that_does_not_answer_in_time_denies(tmp_path):
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        folder = tmp_path / "overrides"
        folder.mkdir()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/decide"
        (folder / "hooks.json").write_text(
            json.dumps({"hooks": [{"event": "pre_tool", "handler": {"type": "http", "url": url, "timeout_s": 0.5}}]})
        )
        hooks = Hooks(load_hooks(tmp_path / "none", folder))
        verdict = await hooks.run("pre_tool", facts("x_y", arguments={}))
    assert verdict.denied == UNAVAILABLE and "within 0.5 s" in (verdict.records[0].error or "")
