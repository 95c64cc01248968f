"""A server request that names no call (an older server over stdio) goes to a call of the one
user whose calls are in flight, never to another user's call."""

from __future__ import annotations

from typing import Any

from switchboard.tools.call_traffic import CallTraffic
from tests.support.sinks import Sink


class Asked(Sink):
    """A call of `owner`'s turn that accepts every question and remembers it was asked."""

    def __init__(self, owner: object) -> None:
        super().__init__()
        self.owner = owner
        self.asked: list[str] = []

    async def elicit(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        self.asked.append(message)
        return ("accept", {"name": "Ada"})


async def ask(traffic: CallTraffic) -> str:
    answer = await traffic.on_elicit("Who are you?", None, None, None)
    return answer.action


async def test_with_one_users_calls_in_flight_the_question_reaches_that_user():
    traffic, turn = CallTraffic("srv"), object()
    first, second = Asked(turn), Asked(turn)
    with traffic.tracking(first, 0.0), traffic.tracking(second, 0.0):
        assert await ask(traffic) == "accept"
    assert first.asked + second.asked == ["Who are you?"]


async def test_with_two_users_calls_in_flight_nobody_is_asked():
    traffic = CallTraffic("srv")
    ann, bob = Asked(object()), Asked(object())
    with traffic.tracking(ann, 0.0), traffic.tracking(bob, 0.0):
        assert await ask(traffic) == "decline"
    assert ann.asked == [] and bob.asked == []


async def test_a_call_routed_by_context_is_asked_whoever_else_is_in_flight():
    traffic = CallTraffic("srv")
    ann, bob = Asked(object()), Asked(object())
    with traffic.tracking(ann, 0.0), traffic.tracking(bob, 0.0), traffic.routed_to(bob):
        assert await ask(traffic) == "accept"
    assert bob.asked == ["Who are you?"] and ann.asked == []
