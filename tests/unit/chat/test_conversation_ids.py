"""A conversation id a client picks is its user's own, for stored and incognito chats alike, and
nobody can compute another user's ids without the server's secret (a real SQLite store)."""

import pytest

from switchboard.chat import ConversationState, TurnState
from switchboard.chat.conversation_ids import ConversationIds, id_key, legacy_scoped_id
from switchboard.chat.conversations import Conversations
from switchboard.chat.events import ChatMessage
from switchboard.config.models import ComplianceLevels
from switchboard.errors import NotFound
from switchboard.files.artifacts import ArtifactStore
from switchboard.history import UserText
from switchboard.identity.users import User
from switchboard.store import open_store

ANN = User(email="ann@example.com", groups=frozenset({"users"}))
BOB = User(email="bob@example.com", groups=frozenset({"users"}))
LEVELS = ComplianceLevels()


def test_ids_are_keyed_by_the_servers_secret_and_the_same_on_every_process():
    one, other = ConversationIds(id_key("secret-one")), ConversationIds(id_key("secret-one"))
    assert one.scoped(ANN.email, "notes") == other.scoped(ANN.email, "notes")  # another process, the same secret
    assert one.scoped(ANN.email, "notes") != ConversationIds(id_key("secret-two")).scoped(ANN.email, "notes")
    assert one.scoped(ANN.email, "notes") != one.scoped(BOB.email, "notes")
    # the hash of before, computable from an address and a name, is no longer what new ids are
    assert one.scoped(ANN.email, "notes") != legacy_scoped_id(ANN.email, "notes")
    assert len(one.scoped(ANN.email, "notes")) == 25


@pytest.fixture
async def conversations(tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/db.sqlite")
    try:
        yield Conversations(store, ArtifactStore(tmp_path / "files"), ids=ConversationIds(id_key("test-secret")))
    finally:
        await store.close()


async def stored(conversations: Conversations, user: User, conversation_id: str) -> str:
    turn = TurnState(user=user, conversation=ConversationState(owner=user.email, id=conversation_id))
    conversations.recorder.keep(turn, UserText(id=f"q-{conversation_id}", text="private question"), {})
    assert await conversations.recorder.begin(turn, "private question")
    return conversation_id


async def test_an_incognito_chat_never_takes_another_users_conversation_id(conversations):
    anns = await stored(conversations, ANN, "ann-conversation-1")
    for incognito in (True, False):  # as for a stored chat: another user's id is not found
        with pytest.raises(NotFound):
            chat = ChatMessage(type="chat", content="hi", incognito=incognito, conversation_id=anns)
            await conversations.turn_for(BOB, chat, "bobs-connection-id", LEVELS)
    # a name bob picks is his own: his incognito chat runs under his keyed id of it
    chat = ChatMessage(type="chat", content="hi", incognito=True, conversation_id="bobs-secret-chat")
    turn = await conversations.turn_for(BOB, chat, "bobs-connection-id", LEVELS)
    assert turn.conversation.incognito and turn.conversation.id == conversations.ids.scoped(
        BOB.email, "bobs-secret-chat"
    )
    # bob's next turn, naming it as the server named it, continues the same incognito chat
    again = ChatMessage(type="chat", content="more", incognito=True, conversation_id=turn.conversation.id)
    assert (await conversations.turn_for(BOB, again, "bobs-connection-id", LEVELS)).conversation is turn.conversation


async def test_an_incognito_chat_on_a_users_own_stored_conversation_starts_its_own(conversations):
    anns = await stored(conversations, ANN, conversations.ids.scoped(ANN.email, "my-diary"))
    chat = ChatMessage(type="chat", content="hi", incognito=True, conversation_id="my-diary")
    turn = await conversations.turn_for(ANN, chat, "anns-connection-id", LEVELS)
    assert turn.conversation.incognito and turn.conversation.id not in (anns, "my-diary")


async def test_a_name_another_user_picked_reaches_a_conversation_of_ones_own(conversations):
    named = await stored(conversations, ANN, conversations.ids.scoped(ANN.email, "my-plans"))
    for incognito in (False, True):
        chat = ChatMessage(type="chat", content="show me", conversation_id="my-plans", incognito=incognito)
        turn = await conversations.turn_for(BOB, chat, "bobs-connection-id", LEVELS)
        assert not turn.conversation.stored and turn.conversation.history == []
        assert turn.conversation.id == conversations.ids.scoped(BOB.email, "my-plans") != named
    with pytest.raises(NotFound):
        await conversations.find(BOB, "my-plans")
    assert (await conversations.find(ANN, "my-plans")).id == named


async def test_a_conversation_named_before_ids_were_keyed_is_still_its_owners(conversations):
    legacy = await stored(conversations, ANN, legacy_scoped_id(ANN.email, "old-notes"))
    assert (await conversations.find(ANN, "old-notes")).id == legacy
    chat = ChatMessage(type="chat", content="more", conversation_id="old-notes")
    turn = await conversations.turn_for(ANN, chat, "anns-connection-id", LEVELS)
    assert turn.conversation.id == legacy and turn.conversation.stored
    with pytest.raises(NotFound):
        await conversations.find(BOB, "old-notes")
