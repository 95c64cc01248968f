"""What used to reach one app process only, through two processes on one PostgreSQL: a background
task's events and questions reach the user's pages on the other process (one opened later too),
and the answer comes back, an MCP App's own calls (and their approvals) reach a page on the other process, an
administrator's reload (with a group change) reaches every process, and the upload quota is one
count across processes. Requests go to chosen processes directly, so each crossing is certain."""

from __future__ import annotations

import json
import sys
import threading
import time

import httpx
import pytest
import yaml
from websockets.sync.client import connect

from tests.support.cluster import running_cluster
from tests.support.harness import PROJECT_ROOT, toolbox_entry, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TASKER = PROJECT_ROOT / "tests" / "support" / "servers" / "tasker.py"
APPS = PROJECT_ROOT / "tests" / "support" / "servers" / "apps.py"
GROUPS = {"dev@localhost": ["users", "admin"], "*": ["users"]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster):
    folder = tmp_path_factory.mktemp("shared")
    write_config(
        folder / "defaults",
        groups=GROUPS,
        servers={
            "local": {"command": sys.executable, "args": [str(TASKER)], "approval": "never"},
            "counter": {"command": sys.executable, "args": [str(APPS)]},
            "team": toolbox_entry(groups=["team"]),
        },
    )
    with running_cluster(
        folder, postgres_cluster.create_database(), replicas=2, extra_env={"SWITCHBOARD_MAX_UPLOADS_PER_USER": "2"}
    ) as running:
        yield running


def _ws(cluster, index: int):
    ws = connect(f"ws://127.0.0.1:{cluster.ports[index]}/ws", open_timeout=30)
    assert json.loads(ws.recv(timeout=30))["type"] == "session"
    return ws


def _until(ws, done, timeout: float = 60) -> list[dict]:
    events: list[dict] = []
    deadline = time.monotonic() + timeout
    while not events or not done(events[-1]):
        events.append(json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))))
    return events


def _of(*types: str):
    return lambda event: event["type"] in types


def _http(cluster, index: int) -> str:
    return f"http://127.0.0.1:{cluster.ports[index]}"


def test_a_tasks_events_and_question_reach_the_page_on_the_other_process(cluster):
    with _ws(cluster, 0) as here, _ws(cluster, 1) as there:
        here.send(json.dumps({"type": "chat", "content": 'local_survey {"topic": "fence"}'}))
        _until(here, _of("message_done"))
        asked = _until(there, _of("elicitation_request"))
        assert any(e["type"] == "task" and e["status"] == "input_required" for e in asked)
        question = asked[-1]
        assert question["message"] == "Which colour for the fence?"
        with _ws(cluster, 1) as later:  # a page opened after the question, on the other process, is asked too
            assert _until(later, _of("elicitation_request"))[-1]["request_id"] == question["request_id"]
        # Answered on the page of the process that does not poll the task.
        there.send(
            json.dumps(
                {
                    "type": "elicitation_response",
                    "request_id": question["request_id"],
                    "action": "accept",
                    "content": {"colour": "teal"},
                }
            )
        )
        done = _until(there, lambda e: e["type"] == "task" and e["status"] in ("completed", "failed"))[-1]
    assert done["status"] == "completed" and done["content"] == "survey of fence: teal"


def test_an_apps_calls_and_their_approval_reach_a_page_on_the_other_process(cluster):
    with _ws(cluster, 0) as here, _ws(cluster, 1) as there:
        here.send(json.dumps({"type": "chat", "content": 'counter_show_counter {"start": 1}'}))
        events = _until(here, _of("message_done"))
        app = next(e for e in events if e["type"] == "app")
        conversation = next(e["conversation_id"] for e in events if e["type"] == "conversation")
        there.send(json.dumps({"type": "attach", "conversation_id": conversation}))  # the page shows it
        _until(there, _of("attached"))
        rpc = f"{_http(cluster, 0)}/api/apps/{app['call_id']}/rpc"
        bump = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "bump", "arguments": {"count": 4}},
        }
        answer = httpx.post(rpc, json=bump, timeout=60)
        assert answer.status_code == 200, answer.text
        seen = _until(there, _of("tool_result"))
        assert any(
            e["type"] == "tool_start" and e["tool"] == "counter_bump" and e["from_app"] == app["call_id"] for e in seen
        )
        assert seen[-1]["ok"] and seen[-1]["from_app"] == app["call_id"]

        answers: list[httpx.Response] = []
        reset = {**bump, "params": {"name": "reset"}}
        waiting = threading.Thread(target=lambda: answers.append(httpx.post(rpc, json=reset, timeout=60)))
        waiting.start()
        request = _until(there, _of("approval_request"))[-1]
        assert request["tool"] == "counter_reset" and request["from_app"] == app["call_id"]
        there.send(json.dumps({"type": "approval_response", "call_id": request["call_id"], "approved": True}))
        waiting.join(60)
    assert answers and answers[0].status_code == 200, answers
    assert answers[0].json()["result"]["content"][0]["text"] == "reset"


def _servers(cluster, index: int) -> set[str]:
    """The servers whose tools the user may use (an administrator sees every server's status)."""
    listed = httpx.get(f"{_http(cluster, index)}/api/config", timeout=30).json()["servers"]
    return {s["name"] for s in listed if s["tools"]}


def test_a_reload_and_a_group_change_reach_every_process(cluster):
    assert "team" not in _servers(cluster, 0) | _servers(cluster, 1)
    groups_file = cluster.folder / "defaults" / "groups.yml"
    groups = yaml.safe_load(groups_file.read_text())
    with _ws(cluster, 1) as there:
        groups_file.write_text(
            yaml.safe_dump({**groups, "users": {**GROUPS, "dev@localhost": ["users", "admin", "team"]}})
        )
        try:
            assert httpx.post(f"{_http(cluster, 0)}/api/admin/reload", timeout=60).status_code == 200
            pushed = _until(there, _of("catalogue_changed"))  # the open page on the other process hears of it
            refreshed = next(e for e in pushed if e["type"] == "session")
            assert "team" in refreshed["groups"] and refreshed["refreshed"] is True
            assert "team" in _servers(cluster, 1)  # the other process's access checks use the new groups
        finally:
            groups_file.write_text(yaml.safe_dump(groups))
            httpx.post(f"{_http(cluster, 1)}/api/admin/reload", timeout=60)
    deadline = time.monotonic() + 30
    while "team" in _servers(cluster, 0) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "team" not in _servers(cluster, 0)  # and back, reloaded through the other one


def test_the_upload_quota_is_one_count_across_processes(cluster):
    def upload(index: int, name: str) -> httpx.Response:
        return httpx.post(
            f"{_http(cluster, index)}/api/files", files={"file": (name, b"hello", "text/plain")}, timeout=30
        )

    assert upload(0, "one.txt").status_code == 200
    assert upload(1, "two.txt").status_code == 200
    for index in (0, 1):
        refused = upload(index, "three.txt")
        assert refused.status_code == 400 and "2 stored uploads" in refused.json()["error"]["message"], refused.text
