"""Stored conversations end to end: real websockets, a real stdio MCP server,
the HTTP LLM double, and the store on SQLite (and on a real Postgres for the
two-app test)."""

from __future__ import annotations

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

SECRET = "proxy-secret-123"


def configure(tmp, llm):
    write_config(
        tmp / "defaults",
        servers={
            "toolbox": toolbox_entry(approval="never", compliance_level="Internal"),
            "public": toolbox_entry(
                approval="never",
                compliance_level="Public",
                tools={"allow": ["echo", "delete_everything"]},
                require_approval=["delete_everything"],
            ),
        },
        models=[double_model(llm)],
        default_model="double",
        groups={"*": ["users"]},
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("conv")
    configure(tmp, llm)
    with running_app(make_settings(tmp, turn_grace_s=5.0)) as (client, services):
        yield client, services


def chat(ws, content, **extra):
    ws.send_json({"type": "chat", "content": content, **extra})
    return until(ws, "message_done")


def user_messages(request):
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_a_conversation_is_stored_listed_and_continued_on_another_connection(site, llm):
    client, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", '{"text": "stored echo"}')]), TextReply("First **answer**."))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "remember the word pelican")
    started = events[0]
    assert started["type"] == "conversation" and started["title"] == "remember the word pelican"
    done = events[-1]
    conversation_id = done["conversation_id"]
    assert conversation_id == started["conversation_id"] and done["user_message_id"]

    listed = client.get("/api/conversations").json()["conversations"]
    assert listed[0]["id"] == conversation_id and listed[0]["message_count"] == 4
    stored = client.get(f"/api/conversations/{conversation_id}").json()
    roles = [m["role"] for m in stored["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert stored["messages"][0]["id"] == done["user_message_id"]
    tool = stored["messages"][2]
    assert tool["ok"] and tool["tool"] == "toolbox_echo" and tool["content"] == "stored echo"
    assert tool["call_id"] == stored["messages"][1]["tool_calls"][0]["id"]
    final = stored["messages"][3]
    assert final["finish_reason"] == "stop" and "<strong>answer</strong>" in final["html"]

    llm.enqueue(TextReply("You said pelican."))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "what word?", conversation_id=conversation_id)
    assert all(e["type"] != "conversation" for e in events)
    assert events[-1]["conversation_id"] == conversation_id
    sent = llm.requests[-1]
    assert user_messages(sent)[0].startswith("remember the word pelican") and user_messages(sent)[-1] == "what word?"
    tool_reply = next(m for m in sent["messages"] if m["role"] == "tool")
    assert "stored echo" in tool_reply["content"]


def test_search_rename_export_and_delete(site, llm):
    client, _ = site
    llm.enqueue(TextReply("Flamingos are pink."))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        conversation_id = chat(ws, "tell me about flamingos")[-1]["conversation_id"]
    found = client.get("/api/conversations", params={"q": "PINK"}).json()["conversations"]
    assert [c["id"] for c in found] == [conversation_id]
    assert client.get("/api/conversations", params={"q": "no-such-word-anywhere"}).json()["conversations"] == []

    renamed = client.patch(f"/api/conversations/{conversation_id}", json={"title": "Birds"}).json()
    assert renamed["title"] == "Birds"
    markdown = client.get(f"/api/conversations/{conversation_id}/export", params={"format": "md"})
    assert markdown.status_code == 200 and "attachment" in markdown.headers["content-disposition"]
    assert markdown.text.startswith("# Birds") and "Flamingos are pink." in markdown.text
    exported = client.get(f"/api/conversations/{conversation_id}/export", params={"format": "json"}).json()
    assert [m["role"] for m in exported["messages"]] == ["user", "assistant"]

    assert client.delete(f"/api/conversations/{conversation_id}").status_code == 204
    assert client.get(f"/api/conversations/{conversation_id}").status_code == 404
    assert conversation_id not in [c["id"] for c in client.get("/api/conversations").json()["conversations"]]


def test_deleting_a_conversation_deletes_its_artifacts(site, llm):
    client, _ = site
    llm.enqueue(ToolCallReply([ToolCall("toolbox_picture", "{}")]), TextReply("here"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "make a picture")
    artifact = next(e for e in events if e["type"] == "tool_result")["artifacts"][0]
    assert client.get(artifact["url"]).status_code == 200
    assert client.delete(f"/api/conversations/{events[-1]['conversation_id']}").status_code == 204
    assert client.get(artifact["url"]).status_code == 404


def test_edit_makes_a_branch_and_the_old_one_can_be_shown_again(site, llm):
    client, _ = site
    llm.enqueue(TextReply("answer one"), TextReply("answer two"), TextReply("edited answer"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        first = chat(ws, "question one")[-1]
        conversation_id = first["conversation_id"]
        second = chat(ws, "question two")[-1]
        edited = chat(ws, "question two, better", edit_of=second["user_message_id"])[-1]
    sent = llm.requests[-1]
    assert user_messages(sent) == ["question one", "question two, better"]
    view = client.get(f"/api/conversations/{conversation_id}").json()
    assert [m["content"] for m in view["messages"]] == [
        "question one",
        "answer one",
        "question two, better",
        "edited answer",
    ]
    assert view["messages"][2]["siblings"] == [second["user_message_id"], edited["user_message_id"]]

    back = client.patch(f"/api/conversations/{conversation_id}", json={"branch": second["user_message_id"]}).json()
    assert [m["content"] for m in back["messages"]] == ["question one", "answer one", "question two", "answer two"]


def test_regenerate_answers_the_last_question_again_and_keeps_the_old_answer(site, llm):
    client, _ = site
    llm.enqueue(TextReply("a dull answer"), TextReply("a better answer"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        conversation_id = chat(ws, "say something")[-1]["conversation_id"]
        again = chat(ws, "", regenerate=True)[-1]
    assert user_messages(llm.requests[-1]) == ["say something"]
    assert all(m["role"] != "assistant" for m in llm.requests[-1]["messages"])
    view = client.get(f"/api/conversations/{conversation_id}").json()
    assert [m["content"] for m in view["messages"]] == ["say something", "a better answer"]
    assert len(view["messages"][1]["siblings"]) == 2 and view["messages"][0]["id"] == again["user_message_id"]


def test_incognito_stores_nothing_but_keeps_the_conversation_in_memory(site, llm):
    client, _ = site
    before = client.get("/api/conversations").json()["conversations"]
    llm.enqueue(TextReply("secret reply"), TextReply("still secret"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "an incognito question", incognito=True)
        assert all(e["type"] != "conversation" for e in events)
        chat(ws, "and another", incognito=True)
    assert user_messages(llm.requests[-1]) == ["an incognito question", "and another"]
    assert client.get("/api/conversations").json()["conversations"] == before
    assert client.get(f"/api/conversations/{events[-1]['conversation_id']}").status_code == 404


def test_a_level_that_may_not_be_mixed_starts_a_new_conversation(site, llm):
    client, _ = site
    llm.enqueue(
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "internal data"}')]),
        TextReply("internal"),
        TextReply("public answer"),
    )
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        internal = chat(ws, "internal work", compliance_level="Internal")[-1]
        events = chat(ws, "now public", compliance_level="Public")
    switched = events[0]
    assert switched["type"] == "conversation" and switched["conversation_id"] != internal["conversation_id"]
    assert "Internal" in switched["reason"]
    assert user_messages(llm.requests[-1]) == ["now public"]  # nothing of the Internal conversation
    assert "internal data" not in str(llm.requests[-1])
    view = client.get(f"/api/conversations/{switched['conversation_id']}").json()
    assert view["compliance_level"] == "Public"


def test_a_level_allowed_with_the_old_one_keeps_the_conversation(site, llm):
    client, _ = site
    llm.enqueue(TextReply("public"), TextReply("internal now"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        first = chat(ws, "public work", compliance_level="Public")[-1]
        events = chat(ws, "go internal", compliance_level="Internal")
    assert all(e["type"] != "conversation" for e in events)
    assert events[-1]["conversation_id"] == first["conversation_id"]
    assert client.get(f"/api/conversations/{first['conversation_id']}").json()["compliance_level"] == "Internal"


def test_an_unknown_level_is_refused(site):
    client, _ = site
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "x", "compliance_level": "Bogus"})
        error = ws.receive_json()
    assert error["type"] == "error" and error["code"] == "bad_request" and "Bogus" in error["message"]
    assert client.get("/api/config", params={"compliance_level": "Bogus"}).status_code == 400


def test_a_running_turn_survives_a_reload_and_its_approval_is_answered_after_it(site, llm):
    client, _ = site
    llm.enqueue(ToolCallReply([ToolCall("public_delete_everything", "{}")]), TextReply("all gone"))
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "chat", "content": "delete please", "compliance_level": "Public"})
        first = until(ws, "approval_request")
    conversation_id = first[0]["conversation_id"]
    asked = first[-1]
    assert asked["tool"] == "public_delete_everything" and asked["server"] == "public"
    with client.websocket_connect("/ws") as ws:  # the reload
        ws.receive_json()
        ws.send_json({"type": "attach", "conversation_id": conversation_id})
        replay = until(ws, "approval_request")
        assert replay[0].pop("server_time") > 0  # the page measures clock skew with it
        assert replay[0] == {"type": "attached", "conversation_id": conversation_id, "running": True}
        assert replay[-1]["call_id"] == asked["call_id"]
        ws.send_json({"type": "approval_response", "call_id": asked["call_id"], "approved": True})
        events = until(ws, "message_done")
    assert next(e for e in events if e["type"] == "tool_result")["ok"]
    assert events[-1]["conversation_id"] == conversation_id
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        ws.send_json({"type": "attach", "conversation_id": conversation_id})
        attached = ws.receive_json()
        assert attached.pop("server_time") > 0
        assert attached == {"type": "attached", "conversation_id": conversation_id, "running": False}


def test_the_model_cannot_give_two_calls_one_id(site, llm):
    client, _ = site
    llm.enqueue(
        ToolCallReply(
            [
                ToolCall("toolbox_echo", '{"text": "one"}', id="dup"),
                ToolCall("toolbox_echo", '{"text": "two"}', id="dup"),
            ]
        ),
        TextReply("ok"),
    )
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        events = chat(ws, "two calls")
    starts = [e["call_id"] for e in events if e["type"] == "tool_start"]
    assert len(set(starts)) == 2 and "dup" not in starts
    ids = [m["tool_call_id"] for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert sorted(ids) == sorted(starts)


def test_another_users_conversation_is_not_found(tmp_path, llm):
    configure(tmp_path, llm)
    settings = make_settings(tmp_path, auth_mode="proxy", proxy_secret=SECRET)
    alice = {"X-User-Email": "alice@example.com", "X-Proxy-Secret": SECRET}
    bob = {"X-User-Email": "bob@example.com", "X-Proxy-Secret": SECRET}
    llm.enqueue(TextReply("for alice"))
    with running_app(settings) as (client, _):
        with client.websocket_connect("/ws", headers=alice) as ws:
            ws.receive_json()
            conversation_id = chat(ws, "alice's secret")[-1]["conversation_id"]
        assert client.get(f"/api/conversations/{conversation_id}", headers=bob).status_code == 404
        assert client.delete(f"/api/conversations/{conversation_id}", headers=bob).status_code == 404
        assert client.get("/api/conversations", headers=bob).json()["conversations"] == []
        assert client.get("/api/conversations", headers=bob, params={"q": "secret"}).json()["conversations"] == []
        with client.websocket_connect("/ws", headers=bob) as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "let me in", "conversation_id": conversation_id})
            error = ws.receive_json()
            assert error["type"] == "error" and error["code"] == "not_found"
            ws.send_json({"type": "attach", "conversation_id": conversation_id})
            assert ws.receive_json()["running"] is False


def test_a_conversation_survives_a_restart(tmp_path, llm):
    configure(tmp_path, llm)
    settings = make_settings(tmp_path)
    llm.enqueue(TextReply("before the restart"), TextReply("after the restart"))
    with running_app(settings) as (client, _):
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            conversation_id = chat(ws, "do not forget me")[-1]["conversation_id"]
    with running_app(settings) as (client, _):
        assert (
            client.get(f"/api/conversations/{conversation_id}").json()["messages"][1]["content"] == "before the restart"
        )
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            chat(ws, "still there?", conversation_id=conversation_id)
    assert user_messages(llm.requests[-1]) == ["do not forget me", "still there?"]


def test_two_apps_on_one_postgres_share_conversations(tmp_path, llm, postgres_url):
    configure(tmp_path, llm)
    first, second = (
        make_settings(tmp_path / name, defaults_dir=tmp_path / "defaults", database_url=postgres_url)
        for name in ("one", "two")
    )
    llm.enqueue(TextReply("answered by one"), TextReply("answered by two"))
    with running_app(first) as (one, _), running_app(second) as (two, _):
        with one.websocket_connect("/ws") as ws:
            ws.receive_json()
            conversation_id = chat(ws, "started on one")[-1]["conversation_id"]
        with two.websocket_connect("/ws") as ws:
            ws.receive_json()
            chat(ws, "continued on two", conversation_id=conversation_id)
        assert [m["content"] for m in one.get(f"/api/conversations/{conversation_id}").json()["messages"]] == [
            "started on one",
            "answered by one",
            "continued on two",
            "answered by two",
        ]
    assert user_messages(llm.requests[-1]) == ["started on one", "continued on two"]


def test_a_store_that_cannot_be_reached_is_loud(tmp_path, llm):
    configure(tmp_path, llm)
    settings = make_settings(tmp_path, database_url="postgresql+asyncpg://nobody:secret@127.0.0.1:1/none")
    with running_app(settings) as (client, _):
        ready = client.get("/readyz")
        assert ready.status_code == 503 and "conversation store" in ready.json()["reason"]
        assert "secret" not in ready.text
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "hello?"})
            error = ws.receive_json()
        assert error["type"] == "error" and "database" in (error["message"] + error.get("action", "")).lower()
        assert client.get("/api/conversations").status_code == 503


def test_a_failed_write_during_a_turn_is_told_to_the_user(tmp_path, llm):
    import sqlite3

    configure(tmp_path, llm)
    settings = make_settings(tmp_path)
    llm.enqueue(ToolCallReply([ToolCall("public_delete_everything", "{}")]), TextReply("never stored"))
    with running_app(settings) as (client, _):
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            ws.send_json({"type": "chat", "content": "break the store", "compliance_level": "Public"})
            asked = until(ws, "approval_request")[-1]
            with sqlite3.connect(settings.data_dir / "switchboard.db") as db:
                db.execute("DROP TABLE messages")  # every later write of this turn fails
            ws.send_json({"type": "approval_response", "call_id": asked["call_id"], "approved": True})
            events = until(ws, "message_done")
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[0]["code"] == "internal" and "sav" in errors[0]["message"].lower()
    assert events[-1]["finish_reason"] == "error"
    assert not any(e["type"] == "tool_result" for e in events)  # never announced, since it was not stored


def test_a_database_that_comes_up_after_the_app_is_used_once_it_does(tmp_path, llm, postgres_cluster):
    import time
    import uuid

    configure(tmp_path, llm)
    name = "late_" + uuid.uuid4().hex[:12]
    settings = make_settings(tmp_path, database_url=postgres_cluster.url(name))
    with running_app(settings) as (client, _):
        assert client.get("/readyz").status_code == 503
        postgres_cluster.create_database(name)  # the database appears after the app started
        deadline = time.monotonic() + 30
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, client.get("/readyz").json()
            time.sleep(0.5)
        assert client.get("/api/conversations").json() == {"conversations": []}
