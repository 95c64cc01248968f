from datetime import UTC, datetime

from switchboard.store import Conversation, Message, active_path, latest_leaf

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def msg(id, parent, seq, role="user", data=None):
    return Message(id, "c", parent, seq, role, f"text of {id}", data or {}, T)


# a tree:  u1 -> a1 -> u2 -> a2          (first branch)
#                 a1 -> u2b -> a2b       (u2 edited: second branch)
#                              a2b -> u3b (newest)
TREE = [
    msg("u1", None, 1),
    msg("a1", "u1", 2, "assistant"),
    msg("u2", "a1", 3),
    msg("a2", "u2", 4, "assistant"),
    msg("u2b", "a1", 5),
    msg("a2b", "u2b", 6, "assistant"),
    msg("u3b", "a2b", 7),
]


def test_active_path_follows_parents_from_the_root():
    assert [m.id for m in active_path(TREE, "a2")] == ["u1", "a1", "u2", "a2"]
    assert [m.id for m in active_path(TREE, "u3b")] == ["u1", "a1", "u2b", "a2b", "u3b"]
    assert [m.id for m in active_path(reversed(TREE), "a1")] == ["u1", "a1"]


def test_active_path_of_nothing_is_empty():
    assert active_path(TREE, None) == []
    assert active_path(TREE, "missing") == []
    assert active_path([], "u1") == []


def test_active_path_survives_a_cycle():
    cyclic = [msg("x", "y", 1), msg("y", "x", 2)]
    assert [m.id for m in active_path(cyclic, "y")] == ["x", "y"]


def test_latest_leaf_is_the_newest_descendant():
    assert latest_leaf(TREE, "a1") == "u3b"  # the newer branch wins
    assert latest_leaf(TREE, "u2") == "a2"
    assert latest_leaf(TREE, "u1") == "u3b"
    assert latest_leaf(TREE, "a2") == "a2"  # a leaf is its own latest leaf
    assert latest_leaf(TREE, "unknown") == "unknown"


def test_latest_leaf_prefers_seq_over_list_order():
    shuffled = [TREE[6], TREE[2], TREE[0], TREE[5], TREE[1], TREE[3], TREE[4]]
    assert latest_leaf(shuffled, "a1") == "u3b"


def test_conversation_to_api():
    c = Conversation("c1", "ann@x", "Plans", "gpt", "internal", ("internal", None), "m9", 4, T, T)
    assert c.to_api() == {
        "id": "c1",
        "title": "Plans",
        "model": "gpt",
        "compliance_level": "internal",
        "created_at": "2026-01-02T03:04:05+00:00",
        "updated_at": "2026-01-02T03:04:05+00:00",
        "message_count": 4,
    }


def test_message_to_api_spreads_data_but_keeps_its_own_fields():
    m = msg("a1", "u1", 2, "assistant", {"tool_calls": [{"id": "k"}], "finish_reason": "stop", "id": "spoof"})
    assert m.to_api() == {
        "id": "a1",
        "parent_id": "u1",
        "role": "assistant",
        "content": "text of a1",
        "created_at": "2026-01-02T03:04:05+00:00",
        "tool_calls": [{"id": "k"}],
        "finish_reason": "stop",
    }
