"""Ids of conversations, messages and tasks: URL-safe, unguessable, and in the order they were made
(so that the store's indexes take new rows at their end)."""

import itertools
import re
import time

from switchboard.chat.conversation_state import new_id
from switchboard.chat.events import CONVERSATION_ID


def test_an_id_is_24_url_safe_characters_and_a_valid_conversation_id():
    for _ in range(1000):
        made = new_id()
        assert len(made) == 24 and re.match(CONVERSATION_ID, made)
        assert re.match(r"^[0-9a-f]{12}", made)  # the time, in lowercase hex: the same order in any collation


def test_ids_made_later_sort_after_and_never_repeat():
    made = []
    for _ in range(5):
        made.extend(new_id() for _ in range(200))
        time.sleep(0.002)  # the next millisecond at least
    batches = [made[i : i + 200] for i in range(0, 1000, 200)]
    for earlier, later in itertools.pairwise(batches):
        assert max(earlier) < min(later)
    assert len(set(made)) == len(made)
    # within one millisecond the random part differs: 72 bits
    assert len({m[12:] for m in made}) == len(made)


def test_the_time_is_the_clock_in_milliseconds():
    before = time.time_ns() // 1_000_000
    stamp = int(new_id()[:12], 16)
    after = time.time_ns() // 1_000_000
    assert before <= stamp <= after
