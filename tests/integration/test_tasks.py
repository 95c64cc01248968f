"""MCP Tasks (`io.modelcontextprotocol/tasks`) through the host, end to end: a tool the server
runs as a background task, over stdio and streamable HTTP. Its progress reaches the page as
`task` events after the turn has ended, a question midway is asked of the user and answered,
a failure and a cancel are reported, the result is stored in the conversation and the model
sees it in the next turn; `GET /api/tasks` and `POST /api/tasks/{id}/cancel` (owner only).
Real sockets (the app served by uvicorn), real server processes
(tests/support/servers/tasker.py), the HTTP LLM double."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from tests.support.doors import events_of, served
from tests.support.harness import double_model, free_port, make_settings, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply
from tests.support.serve import TASKER, tasker_http

pytestmark = pytest.mark.slow

SECRET = "proxy-secret-tasks"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
BOB = {"X-User-Email": "bob@example.com", "X-Proxy-Secret": SECRET}


def tasker_servers(port: int) -> dict[str, Any]:
    return {
        "local": {"command": sys.executable, "args": [str(TASKER)], "approval": "never"},
        "remote": {"url": f"http://127.0.0.1:{port}/mcp", "approval": "never"},
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("tasks")
    port = free_port()
    with tasker_http(port):
        write_config(tmp / "defaults", servers=tasker_servers(port), models=[double_model(llm)], default_model="double")
        settings = make_settings(tmp, auth_mode="proxy", proxy_secret=SECRET, elicitation_timeout_s=30)
        with served(settings) as (base, services):
            yield base, services


class Page:
    """One open page: the websocket, reading every event it gets."""

    def __init__(self, base: str, headers: dict[str, str] = ALICE) -> None:
        self.ws = connect(base.replace("http://", "ws://") + "/ws", additional_headers=headers, open_timeout=10)
        self.session = json.loads(self.ws.recv(timeout=10))

    def send(self, **message: Any) -> None:
        self.ws.send(json.dumps(message))

    def until(self, done: Any, timeout_s: float = 30) -> list[dict[str, Any]]:
        """Events up to and including the first for which `done(event)` holds."""
        events, deadline = [], time.monotonic() + timeout_s
        while True:
            event = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            events.append(event)
            if done(event):
                return events

    def close(self) -> None:
        self.ws.close()


def finished(event: dict[str, Any]) -> bool:
    return event["type"] == "task" and event["status"] in ("completed", "failed", "cancelled")


def start_task(base: str, llm: Any, tool: str, arguments: dict[str, Any]) -> tuple[Page, list[dict[str, Any]]]:
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall(tool, json.dumps(arguments))]), TextReply("Started it in the background."))
    page = Page(base)
    page.send(type="chat", content=f"run {tool}")
    return page, page.until(lambda e: e["type"] == "message_done")


@pytest.mark.parametrize("server", ["local", "remote"])
def test_a_long_task_reports_progress_after_its_turn_and_its_result_lands_in_the_conversation(site, llm, server):
    base, _ = site
    # (each step outlasts a poll: a task is polled at most once a second)
    page, turn = start_task(base, llm, f"{server}_crunch", {"steps": 3, "delay": 1.2})
    started = next(e for e in turn if e["type"] == "task")
    assert started["status"] == "working" and started["server"] == server and started["tool"] == f"{server}_crunch"
    result = next(e for e in turn if e["type"] == "tool_result")
    assert result["ok"] and "background task" in result["content"] and result["call_id"] == started["call_id"]
    after = page.until(finished)  # the turn is over; the task goes on
    page.close()
    messages = [e["message"] for e in after if e["type"] == "task" and e["status"] == "working" and e.get("message")]
    assert "step 3 of 3" in messages or "step 2 of 3" in messages, messages
    done = after[-1]
    assert done["status"] == "completed" and done["ok"] and done["content"] == "crunched 3 steps"
    conversation_id = done["conversation_id"]

    stored = httpx.get(f"{base}/api/conversations/{conversation_id}", headers=ALICE).json()["messages"]
    assert stored[-1]["role"] == "tool" and stored[-1]["content"] == "crunched 3 steps"
    assert stored[-1]["id"] == done["message_id"]
    listed = httpx.get(f"{base}/api/tasks", params={"conversation_id": conversation_id}, headers=ALICE).json()["tasks"]
    assert [(t["id"], t["status"], t["result"]["content"]) for t in listed] == [
        (done["task_id"], "completed", "crunched 3 steps")
    ]

    # The user asks the model to go on from it: the model sees the result.
    llm.enqueue(TextReply("It crunched 3 steps."))
    page = Page(base)
    page.send(type="chat", content="what came of it?", conversation_id=conversation_id)
    page.until(lambda e: e["type"] == "message_done")
    page.close()
    sent = json.dumps(llm.requests[-1]["messages"])
    assert "The background task has finished" in sent and "crunched 3 steps" in sent


@pytest.mark.parametrize("server", ["local", "remote"])
def test_a_task_that_needs_input_midway_asks_the_user_and_finishes_with_the_answer(site, llm, server):
    base, _ = site
    page, _ = start_task(base, llm, f"{server}_survey", {"topic": "fence"})
    asked = page.until(lambda e: e["type"] == "elicitation_request")
    question = asked[-1]
    assert question["message"] == "Which colour for the fence?"
    assert any(e["type"] == "task" and e["status"] == "input_required" for e in asked)
    if server == "local":
        page.send(
            type="elicitation_response", request_id=question["request_id"], action="accept", content={"colour": "teal"}
        )
    else:  # the HTTP door answers a task's question too
        answer = httpx.post(
            f"{base}/api/elicitations/{question['request_id']}",
            headers=ALICE,
            json={"action": "accept", "content": {"colour": "teal"}},
        )
        assert answer.status_code == 204
    done = page.until(finished)[-1]
    page.close()
    assert done["status"] == "completed" and done["content"] == "survey of fence: teal"


def test_a_question_is_not_answered_by_another_user(site, llm):
    base, _ = site
    page, _ = start_task(base, llm, "local_survey", {"topic": "door"})
    question = page.until(lambda e: e["type"] == "elicitation_request")[-1]
    refused = httpx.post(
        f"{base}/api/elicitations/{question['request_id']}",
        headers=BOB,
        json={"action": "accept", "content": {"colour": "black"}},
    )
    assert refused.status_code == 404
    page.send(type="elicitation_response", request_id=question["request_id"], action="decline")
    done = page.until(finished)[-1]
    page.close()
    assert done["content"] == "survey of door: no colour (decline)"


@pytest.mark.parametrize("server", ["local", "remote"])
def test_a_failing_task_is_reported_as_failed(site, llm, server):
    base, _ = site
    page, _ = start_task(base, llm, f"{server}_doomed", {"after": 0.2})
    done = page.until(finished)[-1]
    page.close()
    assert done["status"] == "failed" and done["ok"] is False and "the disk is full" in done["content"]
    stored = httpx.get(f"{base}/api/conversations/{done['conversation_id']}", headers=ALICE).json()["messages"]
    assert stored[-1]["role"] == "tool" and "the disk is full" in stored[-1]["content"]


@pytest.mark.parametrize("server", ["local", "remote"])
def test_the_owner_cancels_a_task_and_nobody_else_can(site, llm, server):
    base, _ = site
    page, turn = start_task(base, llm, f"{server}_forever", {})
    task_id = next(e for e in turn if e["type"] == "task")["task_id"]
    assert httpx.post(f"{base}/api/tasks/{task_id}/cancel", headers=BOB).status_code == 404
    assert all(t["id"] != task_id for t in httpx.get(f"{base}/api/tasks", headers=BOB).json()["tasks"])
    cancelled = httpx.post(f"{base}/api/tasks/{task_id}/cancel", headers=ALICE)
    assert cancelled.status_code == 200 and cancelled.json()["id"] == task_id
    done = page.until(finished)[-1]
    page.close()
    assert done["task_id"] == task_id and done["status"] == "cancelled" and done["content"] == "The task was cancelled."


def test_api_chat_streams_the_task_event_and_api_tasks_lists_newest_first(site, llm):
    base, _ = site
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall("remote_report", "{}")]), TextReply("ok"))
    with httpx.stream("POST", f"{base}/api/chat", headers=ALICE, json={"content": "a report"}, timeout=30) as response:
        events = list(events_of(response.iter_lines()))
    task = next(e for e in events if e["type"] == "task")
    assert task["status"] == "working" and task["tool"] == "remote_report"
    deadline = time.monotonic() + 20
    while True:
        listed = httpx.get(f"{base}/api/tasks", headers=ALICE).json()["tasks"]
        if listed[0]["status"] == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert listed[0]["id"] == task["task_id"] and listed[0]["status"] == "completed"
    assert [t["created_at"] for t in listed] == sorted((t["created_at"] for t in listed), reverse=True)
    stored = httpx.get(f"{base}/api/conversations/{listed[0]['conversation_id']}", headers=ALICE).json()["messages"]
    assert "2 columns, 1 row" in stored[-1]["content"]
    artifact = stored[-1]["artifacts"][0]
    assert artifact["name"] == "report.csv"
    assert httpx.get(f"{base}{artifact['url']}", headers=ALICE).content == b"a,b\n1,2\n"


@pytest.mark.timeout(180)  # two start-ups of the app
def test_a_task_survives_a_restart_of_the_host_and_its_result_lands_in_the_conversation(tmp_path, llm):
    """The app stops while the task runs (the server goes on); started again on the same
    database, it takes the task up, and the result is stored in the conversation."""
    port = free_port()
    with tasker_http(port):
        remote = {"remote": tasker_servers(port)["remote"]}
        write_config(tmp_path / "defaults", servers=remote, models=[double_model(llm)], default_model="double")
        settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)
        with served(settings) as (base, _):
            page, turn = start_task(base, llm, "remote_crunch", {"steps": 6, "delay": 0.5})
            started = next(e for e in turn if e["type"] == "task")
            page.close()
        with served(settings) as (base, services):
            deadline = time.monotonic() + 30
            while True:  # (the task may finish before a page could open: the store says)
                task = httpx.get(f"{base}/api/tasks", headers=ALICE).json()["tasks"][0]
                if task["status"] == "completed" or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert task["id"] == started["task_id"] and task["result"]["content"] == "crunched 6 steps"
            conversation = httpx.get(f"{base}/api/conversations/{started['conversation_id']}", headers=ALICE).json()
            assert [m["role"] for m in conversation["messages"]] == ["user", "assistant", "tool", "assistant", "tool"]
            assert conversation["messages"][-1]["content"] == "crunched 6 steps"
            assert services.tasks.held() == 0


def test_the_terminal_client_says_a_call_runs_as_a_task(site, llm):
    base, _ = site
    token = httpx.post(f"{base}/api/tokens", json={"name": "cli"}, headers=ALICE).json()["token"]
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall("local_crunch", '{"steps": 1, "delay": 0.1}')]), TextReply("Started."))
    command = [sys.executable, "-m", "switchboard", "chat", "crunch", "--url", base, "--token", token]
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "SWITCHBOARD_TOKEN": "", "SWITCHBOARD_URL": ""}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, encoding="utf-8", env=env)
    assert done.returncode == 0 and done.stdout == "Started.\n"
    assert "⧗ local_crunch runs as background task " in done.stderr and "(working)" in done.stderr


def test_a_task_started_in_an_incognito_chat_naming_anothers_conversation_stores_nothing_there(site, llm):
    """Bob names alice's stored conversation as his incognito chat's id to start a task there: it
    is not found, and alice's conversation (what her model reads) is untouched."""
    base, _ = site
    llm.reset()
    llm.enqueue(TextReply("Noted."))
    page = Page(base)
    page.send(type="chat", content="remember this")
    alices = page.until(lambda e: e["type"] == "message_done")[-1]["conversation_id"]
    page.close()
    before = httpx.get(f"{base}/api/conversations/{alices}", headers=ALICE).json()["messages"]

    llm.enqueue(
        ToolCallReply([ToolCall("local_crunch", json.dumps({"steps": 1, "delay": 0.1}))]), TextReply("Started.")
    )
    bob = Page(base, BOB)
    bob.send(type="chat", content="run it", incognito=True, conversation_id=alices)
    refused = bob.until(lambda e: e["type"] in ("error", "message_done"))[-1]
    assert refused["type"] == "error" and refused["code"] == "not_found", refused
    # in an incognito chat of his own the task runs, and its result is stored nowhere
    bob.send(type="chat", content="run it", incognito=True, conversation_id="bobs-own-incognito")
    turn = bob.until(lambda e: e["type"] == "message_done")
    done = bob.until(finished)[-1]
    bob.close()
    assert done["status"] == "completed" and done["conversation_id"] == turn[-1]["conversation_id"] != alices
    assert done.get("message_id") is None
    after = httpx.get(f"{base}/api/conversations/{alices}", headers=ALICE).json()["messages"]
    assert [m["id"] for m in after] == [m["id"] for m in before]
