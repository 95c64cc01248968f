"""Incognito conversations in memory: per user, bounded, expiring, and every one that leaves
is handed over (so that its files can be deleted)."""

from switchboard.chat.conversation_state import ConversationState
from switchboard.chat.incognito.memory import SWEEP_EVERY_S, IncognitoMemory
from switchboard.identity.users import User

ANN, BOB = User("ann@example.com", frozenset()), User("bob@example.com", frozenset())


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(per_user=3, idle_s=600.0):
    dropped: list[str] = []
    clock = Clock()
    memory = IncognitoMemory(lambda s: dropped.append(s.id), per_user=per_user, idle_s=idle_s, timer=clock)
    return memory, dropped, clock


def session(user, cid):
    return ConversationState(owner=user.email, id=cid, incognito=True)


def test_one_user_cannot_push_out_anothers_conversations():
    memory, dropped, _ = make(per_user=3)
    bobs = session(BOB, "bob-1")
    memory.keep(bobs)
    for i in range(100):
        memory.keep(session(ANN, f"ann-{i}"))
    assert memory.get(BOB.email, "bob-1") is bobs
    assert memory.count(ANN.email) == 3 and dropped == [f"ann-{i}" for i in range(97)]


def test_a_conversation_is_found_only_by_its_owner():
    memory, _, _ = make()
    memory.keep(session(ANN, "same-id-1"))
    assert memory.get(BOB.email, "same-id-1") is None
    bobs = session(BOB, "same-id-1")
    memory.keep(bobs)  # the same id, bob's own
    assert memory.get(BOB.email, "same-id-1") is bobs and memory.get(ANN.email, "same-id-1") is not bobs


def test_the_least_recently_used_goes_first():
    memory, dropped, _ = make(per_user=2)
    memory.keep(session(ANN, "a"))
    memory.keep(session(ANN, "b"))
    memory.get(ANN.email, "a")  # used: "b" is now the oldest
    memory.keep(session(ANN, "c"))
    assert dropped == ["b"] and memory.get(ANN.email, "a") is not None


def test_an_idle_conversation_expires_and_is_handed_over_even_if_its_user_never_returns():
    memory, dropped, clock = make(idle_s=600.0)
    memory.keep(session(ANN, "idle"))
    clock.now += 300
    assert memory.get(ANN.email, "idle") is not None  # used: its idle time starts again
    clock.now += 599
    memory.keep(session(BOB, "bob"))
    assert dropped == []
    clock.now += max(2.0, SWEEP_EVERY_S)
    memory.get(BOB.email, "bob")  # any use sweeps every user's shelf now and then
    assert dropped == ["idle"] and memory.count(ANN.email) == 0


def test_holds_tells_whether_memory_still_has_this_very_session():
    memory, _, _ = make(per_user=1)
    first = session(ANN, "one")
    memory.keep(first)
    assert memory.holds(first)
    memory.keep(session(ANN, "two"))
    assert not memory.holds(first)
