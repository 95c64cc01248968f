"""A turn runs in one app process; its approvals, questions, cancel and `attach` reach it from the
others (three processes on one PostgreSQL, LISTEN/NOTIFY between them), and a process that dies
has its turns ended as failed within the lease. Requests go to chosen processes directly, so each
crossing is certain; nginx round robin in front is exercised in test_cluster.py."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from websockets.sync.client import connect

from tests.support.cluster import running_cluster
from tests.support.harness import toolbox_entry, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
LEASE_S = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster):
    folder = tmp_path_factory.mktemp("cross")
    write_config(folder / "defaults", servers={"toolbox": toolbox_entry()})
    with running_cluster(
        folder, postgres_cluster.create_database(), replicas=3, extra_env={"SWITCHBOARD_TURN_LEASE_S": str(LEASE_S)}
    ) as running:
        yield running


def _ws(cluster, index: int):
    ws = connect(f"ws://127.0.0.1:{cluster.ports[index]}/ws", open_timeout=30)
    assert json.loads(ws.recv(timeout=30))["type"] == "session"
    return ws


def _until(ws, *types: str, timeout: float = 60) -> list[dict]:
    events: list[dict] = []
    deadline = time.monotonic() + timeout
    while not events or events[-1]["type"] not in types:
        events.append(json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))))
    return events


def _http(cluster, index: int) -> str:
    return f"http://127.0.0.1:{cluster.ports[index]}"


def test_approval_from_another_process_and_attach_from_a_third(cluster):
    with _ws(cluster, 0) as owner, _ws(cluster, 2) as watcher:
        owner.send(json.dumps({"type": "chat", "content": "toolbox_delete_everything {}"}))
        asked = _until(owner, "approval_request")
        conversation = next(e["conversation_id"] for e in asked if e["type"] == "conversation")
        call_id = asked[-1]["call_id"]
        watcher.send(json.dumps({"type": "attach", "conversation_id": conversation}))
        replay = _until(watcher, "approval_request")
        assert replay[0] == {**replay[0], "type": "attached", "running": True}
        assert any(e["type"] == "tool_start" or e["type"] == "approval_request" for e in replay[1:])
        # The page on process 2 is told nothing about process 0: it answers through process 1.
        response = httpx.post(f"{_http(cluster, 1)}/api/calls/{call_id}/approval", json={"approved": True}, timeout=30)
        assert response.status_code == 204, response.text
        mine = _until(owner, "message_done")
        theirs = _until(watcher, "message_done")
    for events in (mine, theirs):
        result = next(e for e in events if e["type"] == "tool_result")
        assert result["ok"] and "deleted (not really)" in result["content"]
        assert events[-1]["finish_reason"] == "stop"
    assert httpx.post(f"{_http(cluster, 1)}/api/calls/{call_id}/approval", json={"approved": True}).status_code == 404


def test_a_question_is_answered_and_a_turn_cancelled_from_other_processes(cluster):
    with _ws(cluster, 1) as owner:
        owner.send(json.dumps({"type": "chat", "content": "toolbox_ask_name {}"}))
        asked = _until(owner, "elicitation_request")
        response = httpx.post(
            f"{_http(cluster, 2)}/api/elicitations/{asked[-1]['request_id']}",
            json={"action": "accept", "content": {"name": "Ada", "age": 36}},
            timeout=30,
        )
        assert response.status_code == 204, response.text
        result = next(e for e in _until(owner, "message_done") if e["type"] == "tool_result")
        assert "hello Ada, age 36" in result["content"]

        owner.send(json.dumps({"type": "chat", "content": "toolbox_hang {}"}))
        started = _until(owner, "tool_start")
        conversation = next((e["conversation_id"] for e in started if e["type"] == "conversation"), None)
        conversation = conversation or _conversation_of(owner, cluster, 1)
        # A chat on the same conversation through another process is refused while it runs.
        with _ws(cluster, 0) as other:
            other.send(json.dumps({"type": "chat", "content": "hi", "conversation_id": conversation}))
            refused = _until(other, "error")[-1]
            assert "still being written" in refused["message"]
        assert httpx.post(f"{_http(cluster, 0)}/api/conversations/{conversation}/cancel", timeout=30).status_code == 204
        done = _until(owner, "message_done")[-1]
    assert done["finish_reason"] == "cancelled"


def _conversation_of(ws, cluster, index: int) -> str:
    listing = httpx.get(f"{_http(cluster, index)}/api/conversations").json()["conversations"]
    return listing[0]["id"]


def test_a_process_killed_mid_turn_ends_its_turn_as_failed_within_the_lease(cluster):
    with _ws(cluster, 0) as owner, _ws(cluster, 1) as watcher:
        owner.send(json.dumps({"type": "chat", "content": "toolbox_hang {}"}))
        started = _until(owner, "tool_start")
        conversation = next(e["conversation_id"] for e in started if e["type"] == "conversation")
        watcher.send(json.dumps({"type": "attach", "conversation_id": conversation}))
        _until(watcher, "tool_start")
        time.sleep(0.5)  # a call that has run 0.2 s is stored while it runs (chat/recording.py, commit_later)
        killed_at = time.monotonic()
        cluster.stop_app(0, kill=True)
        events = _until(watcher, "message_done", timeout=6 * LEASE_S)
        told_after = time.monotonic() - killed_at
    error = next(e for e in events if e["type"] == "error")
    assert "stopped before it finished" in error["message"] and events[-1]["finish_reason"] == "error"
    assert told_after <= 2 * LEASE_S + 2, told_after  # the lease, plus one heartbeat period
    stored = httpx.get(f"{_http(cluster, 2)}/api/conversations/{conversation}").json()["messages"]
    assert stored[-1]["role"] == "assistant" and stored[-1]["error"]["message"].startswith("The app process running")
    tool = next(m for m in stored if m["role"] == "tool")
    assert tool["ok"] is False  # the open call is answered: the history stays valid for the next turn
    # The conversation goes on from any process.
    with _ws(cluster, 2) as again:
        again.send(
            json.dumps({"type": "chat", "content": 'toolbox_echo {"text": "after"}', "conversation_id": conversation})
        )
        assert _until(again, "message_done")[-1]["finish_reason"] == "stop"
    cluster.start_app(0)
