"""A conversation's calls convert only its new records (`PreparedMessages`); whatever the history
(grown, edited, regenerated, trimmed for the window, with a dict in it), the messages are exactly
what `to_openai` makes of it."""

from __future__ import annotations

from dataclasses import replace

from switchboard.history import TRIMMED_TOOL_RESULT, AssistantText, CallRecord, ToolReply, UserText, trimmed
from switchboard.llm.messages import PreparedMessages, to_openai


def turn(n: int) -> list:
    return [
        UserText(f"u{n}", f"question {n}"),
        AssistantText(f"a{n}", "", calls=(CallRecord(f"c{n}", "toolbox_echo", "{}"),)),
        ToolReply(f"t{n}", f"c{n}", "toolbox_echo", "toolbox", True, f"result {n}"),
        AssistantText(f"b{n}", f"answer {n}", finish_reason="stop"),
    ]


def test_every_call_is_sent_what_to_openai_makes_of_its_history():
    prepared = PreparedMessages()
    history: list = []
    seen = []
    for n in range(5):
        history = [*history, *turn(n)]
        seen.append(list(history))
    edited = [*seen[2][:4], UserText("u-edit", "question 1, edited")]  # an edit of turn 1's question
    regenerated = seen[3][:-1]  # the last answer asked again
    cancelled = [*seen[1], replace(seen[1][-1], id="b-x", finish_reason="cancelled")]
    late = [*seen[1], replace(seen[1][2], id="t-late", late=True)]
    reloaded = [*seen[2][:4], *(replace(r) for r in seen[2][4:])]  # the same records read from the store again
    cut = [*seen[2][:4], replace(seen[2][4], text="question 1, another")]
    calls = [
        *seen,
        trimmed(seen[-1], 2),  # a compaction: the oldest results left out of this view
        seen[-1],
        edited,
        regenerated,
        cancelled,
        late,
        reloaded,
        [*reloaded, *turn(7)],
        cut,
        [*seen[0], {"role": "user", "content": "a sampling request's own message"}],
        seen[0],
        [],
    ]
    for history in calls:
        assert prepared.convert("system", history) == to_openai("system", history)
        assert prepared.convert("", history) == to_openai("", history)
    trimmed_tools = [m["content"] for m in prepared.convert("s", trimmed(seen[-1], 2)) if m["role"] == "tool"]
    assert trimmed_tools[:2] == [TRIMMED_TOOL_RESULT] * 2 and trimmed_tools[2:] == ["result 2", "result 3", "result 4"]


def test_a_changed_message_of_one_call_is_not_sent_in_the_next():
    prepared = PreparedMessages()
    history = turn(0)
    first = prepared.convert("system", history)
    first.append({"role": "user", "content": "added by a caller"})
    first[1] = {"role": "user", "content": "replaced by a caller"}
    assert prepared.convert("system", [*history, *turn(1)]) == to_openai("system", [*history, *turn(1)])
