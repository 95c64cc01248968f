"""Long conversations are read a page at a time (GET /api/conversations/{id}?limit=&before=),
and incognito conversations leave no files behind once memory lets them go."""

from __future__ import annotations

import time
from functools import partial

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

OWNER = "dev@localhost"


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("pages")
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(approval="never")},
        models=[double_model(llm)],
        default_model="double",
    )
    with running_app(make_settings(tmp, incognito_per_user=1)) as (client, services):
        yield client, services


def seed(client, services, conversation_id: str, count: int, chars: int = 10) -> list[str]:
    """A stored conversation of `count` messages, one branch; their ids, oldest first."""
    store = services.store
    client.portal.call(
        partial(
            store.create_conversation, id=conversation_id, owner=OWNER, title="long", model=None, compliance_level=None
        )
    )
    ids, parent = [], None
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        message = client.portal.call(
            partial(
                store.add_message,
                conversation_id,
                id=f"{conversation_id}-{i}",
                parent_id=parent,
                role=role,
                content=f"m{i} " + "x" * chars,
            )
        )
        ids.append(parent := message.id)
    return ids


def test_a_long_conversation_is_read_newest_page_first(site):
    client, services = site
    ids = seed(client, services, "long-conversation", 450)
    first = client.get("/api/conversations/long-conversation").json()
    assert [m["id"] for m in first["messages"]] == ids[250:] and first["has_more"] is True
    assert first["message_count"] == 450
    second = client.get("/api/conversations/long-conversation", params={"before": ids[250]}).json()
    assert [m["id"] for m in second["messages"]] == ids[50:250] and second["has_more"] is True
    last = client.get("/api/conversations/long-conversation", params={"before": ids[50], "limit": 1000}).json()
    assert [m["id"] for m in last["messages"]] == ids[:50] and last["has_more"] is False
    small = client.get("/api/conversations/long-conversation", params={"limit": 3}).json()
    assert [m["content"][:4] for m in small["messages"]] == ["m447", "m448", "m449"]
    assert client.get("/api/conversations/long-conversation", params={"before": "no-such-message"}).status_code == 404
    assert client.get("/api/conversations/long-conversation", params={"limit": 0}).status_code == 422


def test_a_page_holds_about_two_megabytes_of_text(site):
    client, services = site
    ids = seed(client, services, "heavy-conversation", 10, chars=500_000)
    page = client.get("/api/conversations/heavy-conversation").json()
    assert 1 <= len(page["messages"]) <= 4 and page["has_more"]
    assert [m["id"] for m in page["messages"]] == ids[-len(page["messages"]) :]
    assert sum(len(m["content"]) for m in page["messages"]) <= 2_000_000


def _files(services) -> set[str]:
    return {p.stem for p in (services.settings.data_dir / "files").glob("*.json")}


def _until_gone(services, file_ids: set[str]) -> set[str]:
    deadline = time.monotonic() + 10
    while file_ids & _files(services) and time.monotonic() < deadline:
        time.sleep(0.05)
    return file_ids & _files(services)


def test_an_incognito_conversations_files_go_when_memory_lets_it_go(site, llm):
    client, services = site
    llm.reset()
    llm.enqueue(ToolCallReply([ToolCall("toolbox_make_report", "{}")]), TextReply("made"), TextReply("second"))
    upload = client.post("/api/files", files={"file": ("secret.txt", b"incognito secret", "text/plain")}).json()["id"]
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "make a report", "incognito": True, "files": [upload]})
        events = until(ws, "message_done")
        made = {a["id"] for e in events if e["type"] == "tool_result" for a in e["artifacts"]}
        assert len(made) == 2 and {upload, *made} <= _files(services)
        assert not client.get("/api/conversations", params={"q": "make a report"}).json()["conversations"]  # unstored
        # Another incognito conversation: with room for one per user, the first leaves memory.
        ws.send_json({"type": "chat", "content": "again", "incognito": True, "conversation_id": "next-incognito-1"})
        assert until(ws, "message_done")[-1]["finish_reason"] == "stop"
    assert _until_gone(services, {upload, *made}) == set()
    for file_id in (upload, *made):
        assert client.get(f"/api/artifacts/{file_id}").status_code == 404
