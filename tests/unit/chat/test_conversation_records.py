"""Storing a turn's records on a real store (SQLite and Postgres): records kept since the last
commit are stored by one transaction with what came with them (files, allowances, a new model);
a new conversation is created with its first question; and a turn stopped while a commit runs
lets it finish, so the next commit neither loses nor repeats a record."""

import asyncio

import pytest

from switchboard.chat import ConversationState, TurnState
from switchboard.chat.conversations import Conversations
from switchboard.chat.turn_state import TurnProgress
from switchboard.files.artifacts import ArtifactStore
from switchboard.history import AssistantText, CallRecord, ToolReply, UserText
from switchboard.identity.users import User
from switchboard.store import open_store

ANN = User(email="ann@example.com", groups=frozenset({"users"}))


@pytest.fixture(params=["sqlite", "postgres"])
async def conversations(request, tmp_path):
    url = (
        f"sqlite+aiosqlite:///{tmp_path}/db.sqlite"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    store = await open_store(url)
    try:
        yield Conversations(store, ArtifactStore(tmp_path / "files"))
    finally:
        await store.close()


def new_turn(model: str = "m1") -> TurnState:
    return TurnState(
        user=ANN, conversation=ConversationState(owner=ANN.email, id="conv-0001"), progress=TurnProgress(model=model)
    )


async def test_a_new_conversation_is_created_with_its_question_in_one_commit(conversations):
    turn, recorder = new_turn(), conversations.recorder
    recorder.keep(turn, UserText(id="u1", text="first question"), {"files": [{"id": "f1"}, {"id": "f2"}]})
    assert await recorder.begin(turn, "first question")
    loaded = await conversations.store.load("conv-0001")
    assert (loaded.conversation.title, loaded.conversation.model, loaded.conversation.leaf_id) == (
        "first question",
        "m1",
        "u1",
    )
    assert [m.id for m in loaded.messages] == ["u1"] and loaded.files == ["f1", "f2"]
    assert turn.conversation.stored and turn.writes.unsaved == []


async def test_a_tool_round_is_one_transaction_and_the_answer_brings_the_new_model(conversations):
    turn, recorder = new_turn(), conversations.recorder
    recorder.keep(turn, UserText(id="u1", text="q"), {})
    await recorder.begin(turn, "q")
    writes = []
    append = conversations.store.append

    async def counted(*args, **kwargs):
        writes.append([m.id for m in args[1]])
        return await append(*args, **kwargs)

    conversations.store.append = counted
    recorder.keep(turn, AssistantText(id="a1", text="", calls=(CallRecord("c1", "t", "{}"),)), {})
    recorder.keep(turn, ToolReply(id="t1", call_id="c1", tool="t", server="s", ok=True, text="r"), {})
    turn.allow("git:log")
    await recorder.commit(turn)
    turn.progress.model = "m2"
    recorder.keep(turn, AssistantText(id="a2", text="done", finish_reason="stop"), {})
    await recorder.commit(turn)

    assert writes == [["a1", "t1"], ["a2"]]
    loaded = await conversations.store.load("conv-0001")
    assert [m.id for m in loaded.messages] == ["u1", "a1", "t1", "a2"] and loaded.allowances == {"git:log"}
    assert [m.parent_id for m in loaded.messages] == [None, "u1", "a1", "t1"]
    assert (loaded.conversation.model, loaded.conversation.leaf_id, loaded.conversation.message_count) == (
        "m2",
        "a2",
        4,
    )
    assert turn.writes.new_allowances == [] and turn.conversation.model == "m2"


async def test_a_stored_conversations_question_is_written_while_the_turn_goes_on(conversations):
    first = new_turn()
    conversations.recorder.keep(first, UserText(id="u1", text="q"), {})
    await conversations.recorder.begin(first, "q")
    conversation = (await conversations.store.load("conv-0001")).conversation
    turn = TurnState(
        user=ANN,
        conversation=ConversationState(
            owner=ANN.email, id=conversation.id, stored=True, leaf_id=conversation.leaf_id, model="m1"
        ),
        progress=TurnProgress(model="m1"),
    )
    conversations.recorder.keep(turn, UserText(id="u2", text="again"), {})
    assert not await conversations.recorder.begin(turn, "again")  # returns before the write is done
    assert turn.writes.writing is not None
    conversations.recorder.keep(turn, AssistantText(id="a2", text="ok", finish_reason="stop"), {})
    await conversations.recorder.commit(turn)  # waits for the question's write, then stores the answer after it
    assert [m.id for m in (await conversations.store.load("conv-0001")).messages] == ["u1", "u2", "a2"]


async def test_a_turn_stopped_during_a_commit_leaves_nothing_lost_or_twice(conversations):
    turn, recorder = new_turn(), conversations.recorder
    recorder.keep(turn, UserText(id="u0", text="q"), {})
    await recorder.begin(turn, "q")
    for n in range(1, 20):
        recorder.keep(turn, UserText(id=f"u{n}", text="q"), {})
        task = asyncio.create_task(recorder.commit(turn))
        await asyncio.sleep(0)  # the write is under way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    await recorder.commit(turn)  # what the stop left unsaved (the turn's closing commit)
    stored = await conversations.store.load("conv-0001")
    assert [r.id for r in turn.conversation.history] == [m.id for m in stored.messages]
    assert turn.conversation.leaf_id == stored.conversation.leaf_id and turn.writes.unsaved == []


async def test_a_call_message_waits_to_join_its_result_on_sqlite_and_goes_at_once_on_postgres(conversations):
    turn, recorder = new_turn(), conversations.recorder
    recorder.keep(turn, UserText(id="u1", text="q"), {})
    await recorder.begin(turn, "q")
    recorder.keep(turn, AssistantText(id="a1", text="", calls=(CallRecord("c1", "t", "{}"),)), {})

    recorder.commit_later(turn, 0.3)
    await asyncio.sleep(0.1)
    if turn.writes.writing is not None:
        await turn.writes.writing
    stored = [m.id for m in (await conversations.store.load("conv-0001")).messages]
    joins = conversations.store.dialect == "sqlite"
    assert stored == (["u1"] if joins else ["u1", "a1"])
    await asyncio.sleep(0.3)  # the call ran longer: the message is stored while it runs
    if turn.writes.writing is not None:
        await turn.writes.writing
    assert [m.id for m in (await conversations.store.load("conv-0001")).messages] == ["u1", "a1"]
