"""`switchboard chat` run as a subprocess against a served app (proxy mode, a
personal API token): streaming, y/n approvals on stdin, continuing a
conversation, Ctrl-C, and the exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.support.doors import served
from tests.support.harness import PROJECT_ROOT, double_model, free_port, make_settings, toolbox_entry, write_config
from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
ENV = {**os.environ, "PYTHONIOENCODING": "utf-8", "SWITCHBOARD_TOKEN": "", "SWITCHBOARD_URL": ""}


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("cli")
    trip = {
        "command": sys.executable,
        "args": [str(PROJECT_ROOT / "tests" / "support" / "servers" / "eras.py")],
        "approval": "never",
    }  # an MCP 2026-07-28 server that asks over several rounds
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(), "trip": trip},
        models=[double_model(llm)],
        default_model="double",
    )
    settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET, llm_max_attempts=1, turn_grace_s=30.0)
    with served(settings) as (base, services):
        token = httpx.post(f"{base}/api/tokens", json={"name": "cli"}, headers=ALICE).json()["token"]
        yield base, token, services


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def chat(site, *args, stdin="", token=None):
    base, default_token, _ = site
    command = [sys.executable, "-m", "switchboard", "chat", *args, "--url", base, "--token", token or default_token]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120, env=ENV, encoding="utf-8")


def test_an_approval_is_answered_with_y_on_stdin(site, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("All gone."))
    done = chat(site, "delete everything", stdin="y\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "All gone.\n"
    assert "toolbox_delete_everything wants to run" in done.stderr and "Allow? [y/N]" in done.stderr
    assert "✓ toolbox_delete_everything" in done.stderr and "conversation: " in done.stderr
    result = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert "deleted" in result


def test_no_answer_denies_and_the_tool_does_not_run(site, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("Not deleted."))
    done = chat(site, "delete everything", stdin="")  # end of input: no
    assert done.returncode == 0 and done.stdout == "Not deleted.\n" and "denied" in done.stderr
    assert "→ toolbox_delete_everything" not in done.stderr
    assert "denied" in next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"]


def test_a_servers_questions_over_several_rounds_are_asked_on_the_terminal(site, llm):
    """MRTR: two questions in one round, then a request for the model (approved with y)."""
    llm.enqueue(ToolCallReply([ToolCall("trip_plan_trip", "{}")]), TextReply("Sunny."), TextReply("Planned."))
    done = chat(site, "plan a trip", stdin="Lisbon\n3\ny\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Planned.\n"
    assert "? Which city?" in done.stderr and "? How many days?" in done.stderr
    result = next(m for m in llm.requests[-1]["messages"] if m["role"] == "tool")["content"]
    assert "trip to Lisbon for 3 days: Sunny." in result


def test_progress_goes_to_stderr_and_a_conversation_continues(site, llm):
    llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 2, "delay_s": 0.1}')]), TextReply("Counted."))
    first = chat(site, "count to two")
    assert first.returncode == 0 and first.stdout == "Counted.\n"
    assert "→ toolbox_slow" in first.stderr and "… 1/2 step 1" in first.stderr
    conversation_id = first.stderr.rsplit("conversation: ", 1)[1].split()[0]
    llm.enqueue(TextReply("You asked me to count."))
    again = chat(site, "what did I ask?", "--conversation", conversation_id)
    assert again.returncode == 0 and again.stdout == "You asked me to count.\n"
    assert [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "user"] == [
        "count to two",
        "what did I ask?",
    ]


def test_exit_codes(site, llm):
    llm.enqueue(ErrorReply(400, "the model refused"))
    failed = chat(site, "fail")
    assert failed.returncode == 1 and "error: " in failed.stderr
    refused = chat(site, "hi", token="sb_0123456789abcdef_wrong")
    assert refused.returncode == 1 and "API token" in refused.stderr
    unknown = chat(site, "hi", "--model", "nope")
    assert unknown.returncode == 1 and "nope" in unknown.stderr
    unreachable = subprocess.run(
        [sys.executable, "-m", "switchboard", "chat", "hi", "--url", f"http://127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
    )
    assert unreachable.returncode == 3 and "cannot reach" in unreachable.stderr
    usage = subprocess.run(
        [sys.executable, "-m", "switchboard", "chat"], capture_output=True, text=True, timeout=60, env=ENV
    )
    assert usage.returncode == 2


def test_ctrl_c_stops_the_answer_on_the_server(site, llm):
    base, token, services = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_slow", '{"steps": 100, "delay_s": 0.2}')]), TextReply("never"))
    command = [
        sys.executable,
        "-m",
        "switchboard",
        "chat",
        "count to 100",
        "--url",
        base,
        "--token",
        token,
        "--conversation",
        "cli-interrupted-1",
    ]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        encoding="utf-8",
    )
    try:
        for line in proc.stderr:
            if line.startswith("→ toolbox_slow"):
                break
        assert services.turns.running("alice@example.com", "cli-interrupted-1") is not None
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        proc.kill()
    deadline = time.monotonic() + 10  # well within the 30 s grace: Ctrl-C cancelled it, not the grace period
    while services.turns.running("alice@example.com", "cli-interrupted-1") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert services.turns.running("alice@example.com", "cli-interrupted-1") is None
