"""A turn's events are values in the hub and are serialized once each, however many listeners
follow the turn: four websockets on one turn (one started it, three attached while it waited for
an approval) get the same text, made once per event."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from switchboard.chat import events
from tests.support.harness import make_settings, running_app, until, write_toolbox_site
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply

FOLLOWERS = 3


@pytest.fixture(scope="module")
def app(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("fanout")
    write_toolbox_site(tmp, llm)
    with running_app(make_settings(tmp)) as (client, _):
        yield client


@pytest.fixture
def serializations(monkeypatch):
    """How many times each event object was serialized (the objects are kept, so ids stay theirs)."""
    made: Counter[int] = Counter()
    kept: list[object] = []
    serialize = events._Event.model_dump_json

    def counting(self, **options):
        made[id(self)] += 1
        kept.append(self)
        return serialize(self, **options)

    monkeypatch.setattr(events._Event, "model_dump_json", counting)
    return made, kept


def _texts_until_done(ws) -> list[str]:
    texts = []
    while not texts or json.loads(texts[-1])["type"] != "message_done":
        texts.append(ws.receive_text())
    return texts


def test_each_event_is_serialized_once_for_every_listener(app, llm, serializations):
    made, kept = serializations
    llm.enqueue(ToolCallReply([ToolCall("toolbox_delete_everything", "{}")]), TextReply("All gone, as asked."))
    with app.websocket_connect("/ws") as starter:
        starter.receive_json()
        starter.send_json({"type": "chat", "content": "delete everything"})
        waiting = until(starter, "approval_request")
        conversation_id = next(e["conversation_id"] for e in waiting if e["type"] == "conversation")
        followers = [app.websocket_connect("/ws") for _ in range(FOLLOWERS)]
        for ws in followers:
            ws.__enter__()
            ws.receive_json()  # session
            ws.send_json({"type": "attach", "conversation_id": conversation_id})
            assert ws.receive_json()["running"] is True
        try:
            replays = [until(ws, "approval_request") for ws in followers]
            starter.send_json({"type": "approval_response", "call_id": waiting[-1]["call_id"], "approved": True})
            streams = [_texts_until_done(ws) for ws in [starter, *followers]]
        finally:
            for ws in followers:
                ws.__exit__(None, None, None)
    assert all(replay[-1] == waiting[-1] for replay in replays)  # the approval request, replayed to each follower
    assert len({tuple(stream) for stream in streams}) == 1  # the same text on every socket, from the approval on
    sent = Counter(json.loads(text)["type"] for text in streams[0])
    assert sent["tool_result"] == 1 and sent["token"] >= 1 and sent["message_done"] == 1
    assert set(made.values()) == {1}, "an event object was serialized more than once"
    made_by_kind = Counter(event.type for event in kept)
    for kind in ("tool_start", "tool_result", "token", "message_done"):
        assert made_by_kind[kind] == sent[kind], kind  # once per event, not once per socket (4 of them)
