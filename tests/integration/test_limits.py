"""Per-user limits and conversation ownership under concurrency (issue: round 2 of the attack):
one turn per conversation even when four chats with attachments race, a cap on each user's
turns and streams, conversation ids that are the user's own, and 404 (never "still being
written") for another user's running conversation. The app served by uvicorn, real sockets."""

from __future__ import annotations

import json
import threading
import time
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.frames import Close
from websockets.sync.client import connect

from tests.support.doors import events_of, served
from tests.support.harness import make_settings, write_toolbox_site
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"
ALICE = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
BOB = {"X-User-Email": "bob@example.com", "X-Proxy-Secret": SECRET}
TURNS, STREAMS, SOCKETS = 2, 3, 3


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("limits")
    write_toolbox_site(tmp, llm)
    settings = make_settings(
        tmp,
        auth_mode="proxy",
        proxy_secret=SECRET,
        llm_max_attempts=1,
        max_turns_per_user=TURNS,
        max_streams_per_user=STREAMS,
        max_sockets_per_user=SOCKETS,
        max_conversation_chars=100_000,
    )
    with served(settings) as (base, services), httpx.Client(base_url=base, timeout=30) as client:
        yield client, base, services


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def waiting_turn(stack: ExitStack, client: httpx.Client, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    """Start a turn that waits for an approval (its stream stays open in `stack`); its first events."""
    response = stack.enter_context(
        client.stream("POST", "/api/chat", json={"content": "delete all", **body}, headers=headers)
    )
    assert response.status_code == 200, response.read()
    seen: dict[str, Any] = {}
    events = events_of(response.iter_lines())
    stack.callback(events.close)  # kept open (and read) until the stack closes: a dropped reader hangs up
    for event in events:
        seen[event["type"]] = event
        if event["type"] == "approval_request":
            return seen
    raise AssertionError(f"no approval was asked: {seen}")


def cancel(client: httpx.Client, headers: dict[str, str], *conversation_ids: str) -> None:
    for conversation_id in conversation_ids:
        client.post(f"/api/conversations/{conversation_id}/cancel", headers=headers)


def test_four_racing_chats_with_attachments_on_one_conversation_run_one_turn(site, llm):
    client, _, services = site
    llm.enqueue(*[ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]) for _ in range(4)])
    upload = client.post("/api/files", files={"file": ("notes.txt", b"attached notes", "text/plain")}, headers=ALICE)
    body = {"content": "delete all", "conversation_id": "race-conversation-1", "files": [upload.json()["id"]]}
    start = threading.Barrier(4)
    answers: list[tuple[int, Any]] = []

    def chat() -> None:
        start.wait()
        with client.stream("POST", "/api/chat", json=body, headers=ALICE) as response:
            if response.status_code != 200:
                answers.append((response.status_code, json.loads(response.read())))
                return
            events = events_of(response.iter_lines())
            answers.append((200, next(e for e in events if e["type"] in ("approval_request", "error"))))
            cancel(client, ALICE, "race-conversation-1")
            list(events)

    threads = [threading.Thread(target=chat) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(status for status, _ in answers) == [200, 409, 409, 409], answers
    assert next(a for s, a in answers if s == 200)["type"] == "approval_request"
    for status, refused in answers:
        if status == 409:
            assert refused["error"]["code"] == "bad_request"
            assert "still being written" in refused["error"]["message"] and refused["error"]["action"]
    assert len(llm.requests) == 1  # one turn asked the model
    assert services.turns.running("alice@example.com", "race-conversation-1") is None


def test_a_user_has_a_few_turns_and_streams_at_once_and_others_are_not_held_back(site, llm):
    client, base, _ = site
    llm.enqueue(*[ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]) for _ in range(3)])
    with ExitStack() as stack:
        first = waiting_turn(stack, client, ALICE)["conversation"]["conversation_id"]
        second = waiting_turn(stack, client, ALICE)["conversation"]["conversation_id"]
        refused = client.post("/api/chat", json={"content": "one more"}, headers=ALICE)
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
        assert f"{TURNS} answers being written" in refused.json()["error"]["message"]
        bobs = waiting_turn(stack, client, BOB)["conversation"]["conversation_id"]  # bob is not alice

        ws = stack.enter_context(connect(base.replace("http://", "ws://") + "/ws", additional_headers=ALICE))
        assert json.loads(ws.recv(timeout=10))["type"] == "session"
        ws.send(json.dumps({"type": "attach", "conversation_id": first}))  # her third stream
        attached = json.loads(ws.recv(timeout=10))
        assert (attached["type"], attached["conversation_id"], attached["running"]) == ("attached", first, True)
        while json.loads(ws.recv(timeout=10))["type"] != "approval_request":
            pass  # the turn's events so far
        ws.send(json.dumps({"type": "attach", "conversation_id": second}))  # a fourth: too many
        error = json.loads(ws.recv(timeout=10))
        assert error["type"] == "error" and error["code"] == "rate_limited" and "streams open" in error["message"]
        cancel(client, ALICE, first, second)
        cancel(client, BOB, bobs)
    assert client.post("/api/chat", json={"content": "hi again"}, headers=ALICE).status_code == 200


def _open(stack: ExitStack, base: str, who: dict[str, str]) -> Close | None:
    """Opens a websocket of `who` (kept open until `stack` closes): None when it was let in (its
    first event is `session`), else the close it got."""
    ws = stack.enter_context(connect(base.replace("http://", "ws://") + "/ws", additional_headers=who, open_timeout=10))
    try:
        assert json.loads(ws.recv(timeout=10))["type"] == "session"
    except ConnectionClosed as closed:
        return closed.rcvd
    return None


def test_a_user_holds_a_few_websockets_open_and_others_are_not_held_back(site):
    """Every open socket is a descriptor and memory: one user's are capped (300 used to be let in)."""
    _, base, _ = site
    with ExitStack() as stack:
        assert [_open(stack, base, ALICE) for _ in range(SOCKETS)] == [None] * SOCKETS
        refused = _open(stack, base, ALICE)
        assert refused is not None and refused.code == 1008, refused
        assert (
            f"you have {SOCKETS} Switchboard tabs or connections open" in refused.reason
            and "close one of them" in refused.reason
        )
        assert _open(stack, base, BOB) is None  # bob is not alice
    with ExitStack() as stack:  # closed ones make room again, once the server has seen them go
        deadline = time.monotonic() + 30
        while _open(stack, base, ALICE) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _open(stack, base, ALICE) is None


def test_another_users_running_conversation_is_not_found(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]))
    with ExitStack() as stack:
        alices = waiting_turn(stack, client, ALICE)["conversation"]["conversation_id"]
        probe = client.post("/api/chat", json={"content": "let me in", "conversation_id": alices}, headers=BOB)
        assert probe.status_code == 404 and probe.json()["error"]["code"] == "not_found"
        assert client.post(f"/api/conversations/{alices}/cancel", headers=BOB).status_code == 404
        cancel(client, ALICE, alices)


def test_client_chosen_ids_are_each_users_own(site, llm):
    client, _, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("for alice"))
    with ExitStack() as stack:
        # bob takes the name first, and his turn is still running under it
        waiting_turn(stack, client, BOB, conversation_id="team-standup-notes")
        alice = client.post(
            "/api/chat", json={"content": "alice's notes", "conversation_id": "team-standup-notes"}, headers=ALICE
        )
        assert alice.status_code == 200
        events = list(events_of(alice.iter_lines()))
        assert events[-1]["type"] == "message_done" and events[-1]["finish_reason"] == "stop"
        cancel(client, BOB, "team-standup-notes")
    alices = client.get("/api/conversations/team-standup-notes", headers=ALICE).json()
    bobs = client.get("/api/conversations/team-standup-notes", headers=BOB).json()
    assert [m["content"] for m in alices["messages"]] == ["alice's notes", "for alice"]
    assert bobs["messages"][0]["content"] == "delete all" and alices["id"] != bobs["id"]
    assert events[0] == {"type": "conversation", "conversation_id": alices["id"], "title": "alice's notes"}
    # the store's id works as well, for its owner only
    assert client.get(f"/api/conversations/{alices['id']}", headers=ALICE).status_code == 200
    assert client.get(f"/api/conversations/{alices['id']}", headers=BOB).status_code == 404
    listed = client.get("/api/conversations", headers=ALICE).json()["conversations"]
    assert alices["id"] in {c["id"] for c in listed} and bobs["id"] not in {c["id"] for c in listed}


def test_a_conversation_past_the_size_limit_is_not_continued(site, llm):
    client, _, _ = site
    llm.enqueue(TextReply("noted"))
    first = client.post("/api/chat", json={"content": "x" * 120_000, "conversation_id": "very-long-one"}, headers=ALICE)
    assert list(events_of(first.iter_lines()))[-1]["type"] == "message_done"
    refused = client.post("/api/chat", json={"content": "and more", "conversation_id": "very-long-one"}, headers=ALICE)
    assert refused.status_code == 400 and "too long to continue" in refused.json()["error"]["message"]
    assert "new conversation" in refused.json()["error"]["action"]
    assert client.get("/api/conversations/very-long-one", headers=ALICE).json()["messages"][1]["content"] == "noted"


def test_odd_ids_and_searches_answer_without_failing(site):
    client, _, _ = site
    for q in ("\x00", "a\x00b", "note\x00s"):
        found = client.get("/api/conversations", params={"q": q}, headers=ALICE)
        assert found.status_code == 200 and found.json() == {"conversations": []}, q
    for odd in ("%00", "a%00bcdefgh", "x" * 65, "short"):
        assert client.get(f"/api/conversations/{odd}", headers=ALICE).status_code == 404, odd
