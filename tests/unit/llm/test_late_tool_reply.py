"""A background task's result, added to a conversation after the turn that started it, reaches
the model as a note after the turn, never as a second tool message for the same call (which a
provider refuses)."""

from switchboard.history import AssistantText, CallRecord, ToolReply, UserText
from switchboard.llm.messages import to_openai


def test_a_late_task_result_is_a_note_and_the_call_keeps_one_tool_message():
    history = [
        UserText(id="u1", text="crunch it"),
        AssistantText(id="a1", text="", calls=(CallRecord("c1", "tasker_crunch", "{}"),)),
        ToolReply(id="t1", call_id="c1", tool="tasker_crunch", server="tasker", ok=True, text="started as a task"),
        AssistantText(id="a2", text="It runs in the background.", finish_reason="stop"),
        ToolReply(
            id="t2", call_id="c1", tool="tasker_crunch", server="tasker", ok=True, text="crunched 3 steps", late=True
        ),
        UserText(id="u2", text="what came of it?"),
    ]
    messages = to_openai("", history)
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant", "user", "user"]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["c1"]
    assert messages[4]["content"].startswith("[The background task has finished: tasker_crunch (call c1)]")
    assert messages[4]["content"].endswith("crunched 3 steps")
