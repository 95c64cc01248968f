"""Three app processes on one PostgreSQL and one data dir, behind nginx doing round robin with no
stickiness: whatever process a request lands on, the user's conversations, files and tokens are
there."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.sync.client import connect

from tests.integration.test_per_user_sessions import run_signin
from tests.support.cluster import running_cluster
from tests.support.harness import toolbox_entry, write_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]  # three app processes start (slowly on a busy machine)


@pytest.fixture(scope="module")
def oauth_server():
    yield from run_signin("--oauth")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, postgres_cluster, oauth_server):
    folder = tmp_path_factory.mktemp("cluster")
    write_config(
        folder / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never"),
            "signin": {"url": oauth_server, "auth": {"type": "oauth"}, "approval": "never"},
        },
    )
    with running_cluster(folder, postgres_cluster.create_database(), replicas=3) as running:
        yield running


def _chat(base: str, content: str, **extra: object) -> list[tuple[str, dict]]:
    events, kind = [], None
    with (
        httpx.Client(timeout=60) as client,
        client.stream("POST", f"{base}/api/chat", json={"content": content, **extra}) as r,
    ):
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind:
                events.append((kind, json.loads(line[6:])))
    return events


def test_requests_spread_over_every_process_and_each_sees_the_same_conversations(cluster):
    events = _chat(cluster.base, 'toolbox_echo {"text": "from one process"}')
    done = next(data for kind, data in events if kind == "message_done")
    conversation = done["conversation_id"]
    seen = []
    for _ in range(6):  # fresh connections: nginx sends them round robin
        with httpx.Client() as client:
            listing = client.get(f"{cluster.base}/api/conversations").json()["conversations"]
            seen.append(any(c["id"] == conversation for c in listing))
            messages = client.get(f"{cluster.base}/api/conversations/{conversation}").json()["messages"]
            assert any(m["role"] == "tool" and "from one process" in m["content"] for m in messages)
    assert all(seen)
    assert len(set(cluster.upstreams())) == 3, cluster.upstreams()


def test_a_file_uploaded_through_one_process_is_read_through_the_others(cluster):
    file_id = httpx.post(f"{cluster.base}/api/files", files={"file": ("n.txt", b"shared bytes", "text/plain")}).json()[
        "id"
    ]
    for _ in range(3):
        with httpx.Client() as client:
            assert client.get(f"{cluster.base}/api/artifacts/{file_id}").content == b"shared bytes"
    answered = [u for u in cluster.upstreams()[-3:]]
    assert len(set(answered)) >= 2, answered


def test_an_api_token_made_on_one_process_works_on_every_other(cluster):
    token = httpx.post(f"{cluster.base}/api/tokens", json={"name": "ci"}).json()["token"]
    for _ in range(3):
        with httpx.Client() as client:
            response = client.get(f"{cluster.base}/v1/models", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200 and response.json()["data"]


def test_an_oauth_sign_in_whose_callback_lands_on_another_process_finishes(cluster):
    """Connect through nginx (one process); the browser comes back from the authorization server
    to another process (here sent there directly: nginx's round robin cannot be lined up for
    certain), which finishes the sign-in from the pending sign-in in the shared store; then the
    server's tools work for the user on every process."""
    with httpx.Client(timeout=60) as client:
        signin = next(s for s in client.get(f"{cluster.base}/api/config").json()["servers"] if s["name"] == "signin")
        assert signin["status"] == "needs_auth" and signin["auth"]["connected"] is False
        start = client.get(f"{cluster.base}/api/servers/signin/connect", follow_redirects=False)
        assert start.status_code == 302, start.text
        connect_by = cluster.upstreams()[-1]
        back = httpx.get(start.headers["location"], follow_redirects=False).headers["location"]
        assert back.startswith(f"{cluster.base}/oauth/callback?"), back
        connect_port = int(connect_by.rsplit(":", 1)[1])
        other = next(
            port
            for port, proc in zip(cluster.ports, cluster.procs, strict=True)
            if port != connect_port and proc is not None and proc.poll() is None
        )
        done = client.get(f"http://127.0.0.1:{other}/oauth/callback?{urlsplit(back).query}", follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/?connected=signin", done.headers
    for _ in range(3):  # every process now calls the server with the user's token
        result = next(data for kind, data in _chat(cluster.base, "signin_whoami {}") if kind == "tool_result")
        assert result["ok"] and "token" in result["content"], result


def _ws_turn(port: int, message: dict) -> list[dict]:
    with connect(f"ws://127.0.0.1:{port}/ws", open_timeout=30) as ws:
        assert json.loads(ws.recv(timeout=30))["type"] == "session"
        ws.send(json.dumps({"type": "chat", **message}))
        events = [json.loads(ws.recv(timeout=60))]
        while events[-1]["type"] not in ("message_done", "error"):
            events.append(json.loads(ws.recv(timeout=60)))
        return events


def test_an_incognito_chat_goes_on_through_another_process_and_nothing_is_stored(cluster):
    """The page holds an incognito chat's history, sealed by the server; another process opens it
    and goes on (here: regenerates the last answer, which needs the history). What the browser
    made or changed, or another conversation's state, does not open."""
    conversation, marker = "incognito-across-1", "incognito marker 7f3a"
    first = _ws_turn(
        cluster.ports[0],
        {"content": f'toolbox_echo {{"text": "{marker}"}}', "incognito": True, "conversation_id": conversation},
    )
    kinds = [e["type"] for e in first]
    assert kinds[-2:] == ["incognito_state", "message_done"], kinds  # sealed before the turn's end
    state = first[-2]["state"]
    # the name the client picked is the user's own: the chat's id is a keyed hash of it (the same on every process)
    named = first[-2]["conversation_id"]
    assert named != conversation and first[-1]["conversation_id"] == named and marker not in state

    again = _ws_turn(
        cluster.ports[1],
        {
            "content": "",
            "regenerate": True,
            "incognito": True,
            "conversation_id": conversation,
            "incognito_state": state,
        },
    )
    result = next(e for e in again if e["type"] == "tool_result")
    assert marker in result["content"] and again[-1]["finish_reason"] == "stop"
    newer = next(e for e in again if e["type"] == "incognito_state")["state"]

    # Refused: a state changed by the browser, another conversation's, and none at all elsewhere.
    changed = newer[:60] + ("A" if newer[60] != "A" else "B") + newer[61:]
    for bad, conversation_id in ((changed, conversation), (newer, "incognito-across-2")):
        refused = _ws_turn(
            cluster.ports[2],
            {
                "content": "",
                "regenerate": True,
                "incognito": True,
                "conversation_id": conversation_id,
                "incognito_state": bad,
            },
        )
        assert refused[-1]["type"] == "error" and refused[-1]["code"] == "bad_request", refused[-1]
    without = _ws_turn(
        cluster.ports[2], {"content": "", "regenerate": True, "incognito": True, "conversation_id": conversation}
    )
    assert without[-1]["type"] == "error" and "no question to answer again" in without[-1]["message"]

    # Nothing of it was written: no process lists or finds it.
    for port in cluster.ports:
        assert (
            httpx.get(f"http://127.0.0.1:{port}/api/conversations", params={"q": marker}).json()["conversations"] == []
        )
