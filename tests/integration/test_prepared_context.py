"""A stored conversation's prepared context is kept by each process between turns
(chat/prepared_contexts.py). What the model is sent must always be the conversation as the store
has it now: after an edit, a regenerate, a branch switch, a compaction (tool results left out when a
call overflows the window), and another process's turn or edit. Real websockets, the HTTP LLM
double (whose requests are asserted on), the store on SQLite, and two apps on one PostgreSQL."""

from __future__ import annotations

import pytest

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import ErrorReply, TextReply, ToolCall, ToolCallReply

OVERFLOW = ErrorReply(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 131000 tokens.",
    code="context_length_exceeded",
)


def configure(tmp, llm):
    write_config(
        tmp / "defaults",
        servers={"toolbox": toolbox_entry(approval="never")},
        models=[double_model(llm)],
        default_model="double",
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("prepared")
    configure(tmp, llm)
    with running_app(make_settings(tmp)) as (client, services):
        yield client, services


@pytest.fixture(autouse=True)
def fresh(llm):
    llm.reset()


def chat(ws, content, **extra):
    ws.send_json({"type": "chat", "content": content, **extra})
    return until(ws, "message_done")[-1]


def sent(request):
    """What the model was sent, without the system prompt: (role, text) in order."""
    return [(m["role"], m.get("content") or "") for m in request["messages"] if m["role"] != "system"]


def talk(llm, ws, pairs, **extra):
    """Each (question, answer) as a turn; the last turn's `message_done`."""
    done = None
    for question, answer in pairs:
        llm.enqueue(TextReply(answer))
        done = chat(ws, question, **extra)
    return done


def test_an_edit_and_the_turn_after_it_send_the_new_branch(site, llm):
    client, _ = site
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        talk(llm, ws, [("q1", "a1")])
        second = talk(llm, ws, [("q2", "a2")])
        talk(llm, ws, [("q3", "a3")])
        talk(llm, ws, [("q2 again", "a2b")], edit_of=second["user_message_id"])
        assert sent(llm.requests[-1]) == [("user", "q1"), ("assistant", "a1"), ("user", "q2 again")]
        talk(llm, ws, [("q4", "a4")])
    assert sent(llm.requests[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2 again"),
        ("assistant", "a2b"),
        ("user", "q4"),
    ]


def test_a_regenerate_and_the_turn_after_it_send_the_new_answer(site, llm):
    client, _ = site
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        talk(llm, ws, [("q1", "a1"), ("q2", "a dull answer")])
        llm.enqueue(TextReply("a better answer"))
        chat(ws, "", regenerate=True)
        assert sent(llm.requests[-1]) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]
        talk(llm, ws, [("q3", "a3")])
    assert sent(llm.requests[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a better answer"),
        ("user", "q3"),
    ]


def test_a_branch_switch_is_where_the_next_turn_goes_on(site, llm):
    client, _ = site
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        conversation_id = talk(llm, ws, [("q1", "a1")])["conversation_id"]
        second = talk(llm, ws, [("q2", "a2")])
        talk(llm, ws, [("q3", "a3")])
        talk(llm, ws, [("q2 other", "a2c")], edit_of=second["user_message_id"])
        talk(llm, ws, [("q3 on the other branch", "a3c")])
        shown = client.patch(f"/api/conversations/{conversation_id}", json={"branch": second["user_message_id"]})
        assert shown.status_code == 200
        talk(llm, ws, [("q4", "a4")])
    assert sent(llm.requests[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a2"),
        ("user", "q3"),
        ("assistant", "a3"),
        ("user", "q4"),
    ]


def test_a_compaction_is_sent_on_its_retry_and_the_next_turn_sends_the_whole_results(site, llm):
    client, _ = site
    with client.websocket_connect("/ws") as ws:
        ws.receive_json()
        llm.enqueue(ToolCallReply([ToolCall("toolbox_echo", '{"text": "kept result"}')]), TextReply("a1"))
        chat(ws, "q1")
        llm.enqueue(OVERFLOW, TextReply("a2"))
        chat(ws, "q2")
        overflowed, retried = llm.requests[-2], llm.requests[-1]
        tool_texts = [text for role, text in sent(overflowed) if role == "tool"]
        assert len(tool_texts) == 1 and "kept result" in tool_texts[0]
        retried_tools = [text for role, text in sent(retried) if role == "tool"]
        assert len(retried_tools) == 1 and "kept result" not in retried_tools[0]  # left out of this view
        talk(llm, ws, [("q3", "a3")])
    # a compaction is a view of one turn: the stored result is whole, and so is the next turn's
    later = [text for role, text in sent(llm.requests[-1]) if role == "tool"]
    assert len(later) == 1 and "kept result" in later[0]
    assert sent(llm.requests[-1])[-3:] == [("user", "q2"), ("assistant", "a2"), ("user", "q3")]


def test_another_processs_turns_and_edits_are_sent(tmp_path, llm, postgres_url):
    configure(tmp_path, llm)
    one_settings, two_settings = (
        make_settings(tmp_path / name, defaults_dir=tmp_path / "defaults", database_url=postgres_url)
        for name in ("one", "two")
    )
    with running_app(one_settings) as (one, _), running_app(two_settings) as (two, _):
        with one.websocket_connect("/ws") as on_one, two.websocket_connect("/ws") as on_two:
            on_one.receive_json(), on_two.receive_json()
            conversation_id = talk(llm, on_one, [("q1", "a1")])["conversation_id"]
            second = talk(llm, on_one, [("q2", "a2")], conversation_id=conversation_id)
            talk(llm, on_two, [("q3 on two", "a3")], conversation_id=conversation_id)
            talk(llm, on_one, [("q4 on one", "a4")], conversation_id=conversation_id)
            assert sent(llm.requests[-1]) == [
                ("user", "q1"),
                ("assistant", "a1"),
                ("user", "q2"),
                ("assistant", "a2"),
                ("user", "q3 on two"),
                ("assistant", "a3"),
                ("user", "q4 on one"),
            ]
            talk(
                llm,
                on_two,
                [("q2 edited on two", "a2b")],
                conversation_id=conversation_id,
                edit_of=second["user_message_id"],
            )
            talk(llm, on_one, [("q5 on one", "a5")], conversation_id=conversation_id)
    assert sent(llm.requests[-1]) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2 edited on two"),
        ("assistant", "a2b"),
        ("user", "q5 on one"),
    ]
