"""The messages between app processes (chat/relay/messages.py): every kind is read back as the
same typed message, on the wire with short keys and in ASCII (a NOTIFY payload is counted in
bytes); a text that is not one of them is refused as data (another version's, in a rolling
restart): logged once per kind and dropped, never a crash; a large text for a page goes in pieces
that each fit in a payload, however long the owner's address."""

from __future__ import annotations

import logging
from typing import get_args

import pytest

from switchboard.chat.relay.follow import Pieces, pieces
from switchboard.chat.relay.messages import (
    Ack,
    AdminChanged,
    ApprovalAsk,
    Ask,
    CancelAsk,
    CredentialsChanged,
    ElicitationAsk,
    EventBatch,
    EventsInTable,
    Follow,
    PageEvent,
    QuestionsWanted,
    Reader,
    RelayMessage,
    Reloaded,
    TrustChanged,
    TurnEnd,
    TurnLost,
    UserEvent,
    decode,
    encode,
)
from switchboard.store.live import MAX_PAYLOAD

PROCESS = "0123456789abcdef"

EXAMPLES: list[RelayMessage] = [
    Follow(conversation_id="c-1", user="ann@example.com", sender=PROCESS),
    EventBatch(conversation_id="c-1", first=3, bodies=['{"type":"token","text":"é"}', '{"type":"token","text":"b"}']),
    EventsInTable(conversation_id="c-1"),
    TurnEnd(conversation_id="c-1", upto=12),
    TurnEnd(conversation_id="c-1"),
    Ask(user="ann@example.com", ask_id="r1", sender=PROCESS, request=CancelAsk(conversation_id="c-1")),
    Ask(
        user="ann@example.com",
        vouched_groups=("staff", "team-a"),
        via_token=True,
        ask_id="r2",
        sender=PROCESS,
        request=ApprovalAsk(call_id="call_1", approved=True, arguments={"path": "/ü"}, remember=True, reason="fine"),
    ),
    Ask(
        user="ann@example.com",
        ask_id="r3",
        sender=PROCESS,
        request=ElicitationAsk(request_id="q1", action="accept", content={"name": "Ann"}),
    ),
    Ack(ask_id="r1", ok=True),
    TurnLost(conversation_id="c-1"),
    PageEvent(conversation_id="c-1", owner="ann@example.com", sender=PROCESS, text='{"type":"token","text":"x"}'),
    PageEvent(
        conversation_id="c-1", owner="ann@example.com", sender=PROCESS, text="ab", piece_of="t0", index=1, count=3
    ),
    UserEvent(owner="ann@example.com", sender=PROCESS, text="{}", page="page-1"),
    UserEvent(owner="ann@example.com", sender=PROCESS, text="{}"),
    QuestionsWanted(owner="ann@example.com", page="page-1", sender=PROCESS),
    Reloaded(sender=PROCESS),
    CredentialsChanged(server="github", owner="ann@example.com", sender=PROCESS),
    AdminChanged(what="sessions", owner="ann@example.com", sender=PROCESS),
    AdminChanged(what="servers", sender=PROCESS),
    TrustChanged(server="github", sender=PROCESS),
]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda m: f"{m.op}")
def test_every_message_is_read_back_as_itself(message):
    text = encode(message)
    assert text.isascii()
    assert decode(text) == message
    assert decode(text.encode()) == message  # (as bytes too)
    assert "conversation_id" not in text and '"sender"' not in text  # short keys on the wire


def test_the_examples_cover_every_kind_of_message_and_of_request():
    kinds = {type(m) for m in EXAMPLES}
    assert kinds == set(get_args(RelayMessage))
    requests = {type(m.request) for m in EXAMPLES if isinstance(m, Ask)}
    assert requests == {CancelAsk, ApprovalAsk, ElicitationAsk}


def test_the_wire_keys_stay_short():
    assert encode(TurnEnd(conversation_id="c-1")) == '{"op":"end","c":"c-1"}'
    assert encode(EventBatch(conversation_id="c-1", first=1, bodies=["{}"])) == '{"op":"ev","c":"c-1","s":1,"b":["{}"]}'


BAD = [
    "",  # nothing
    "not json",
    "[1, 2]",
    '{"c": "c-1"}',  # no op
    '{"op": "teleport", "c": "c-1"}',  # a kind this version does not know
    '{"op": "end"}',  # a field missing
    '{"op": "ev", "c": "c-1", "s": "three", "b": []}',  # a field of the wrong type
    '{"op": "ask", "what": "cancel", "user": "a@b", "rid": "r", "from": "p", "c": "c-1"}',  # an older version's ask
    '{"op": "ask", "u": "a@b", "rid": "r", "from": "p", "q": {"what": "delete_everything"}}',
]


@pytest.mark.parametrize("text", BAD)
def test_a_malformed_message_is_refused_as_data(text):
    with pytest.raises(ValueError):
        decode(text)
    assert Reader().read(text) is None


def test_unreadable_messages_are_logged_once_per_kind_and_dropped(caplog):
    reader = Reader()
    with caplog.at_level(logging.WARNING, logger="switchboard.chat"):
        for _ in range(3):
            assert reader.read('{"op":"teleport","c":"c-1"}') is None
        assert reader.read('{"op":"end"}') is None
        assert reader.read(encode(TurnLost(conversation_id="c-1"))) == TurnLost(conversation_id="c-1")
    warned = [r for r in caplog.records if getattr(r, "event", None) == "relay_bad_message"]
    assert len(warned) == 2 and "teleport" in warned[0].getMessage() and "end" in warned[1].getMessage()


@pytest.mark.parametrize(
    "text",
    ["y" * 7600, '"' * 40_000],  # one that fits in a message when the address is short; a large one that escapes
    ids=["fits", "pieces"],
)
def test_a_text_goes_in_pieces_that_each_fit_in_a_payload_whatever_the_address(text):
    owner = "a" * 300 + "@example.com"  # an address may take 320 bytes
    sent = list(pieces(PageEvent(conversation_id="c" * 64, owner=owner, sender=PROCESS), text))
    assert all(len(encode(m)) <= MAX_PAYLOAD for m in sent)
    gathered = Pieces()
    read = [decode(encode(m)) for m in sent]
    assert all(isinstance(m, PageEvent) for m in read)
    got = [gathered.text(m) for m in read if isinstance(m, PageEvent)]
    assert got[:-1] == [None] * (len(sent) - 1) and got[-1] == text
