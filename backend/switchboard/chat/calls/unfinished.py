"""What a tool call that a turn's end left open says happened, for the user's card, the stored
conversation and the model's next look at the history."""

from __future__ import annotations

from typing import Literal

__all__ = ["StoppedBy", "unfinished_text"]

StoppedBy = Literal["user", "restart", "abandoned"]


def unfinished_text(stopped_by: StoppedBy | None, awaiting_approval: bool, awaiting_answer: bool = False) -> str:
    if stopped_by == "restart":
        if awaiting_approval:
            return "The server restarted while this call waited for approval, so it did not run."
        if awaiting_answer:  # the question lived in the process that stopped; the server keeps nothing of it
            return "The server restarted while this call waited for your answer, so it did not finish. Ask again to run it."
        return "The server restarted while this call was running, so it did not finish."
    if stopped_by == "abandoned":
        return "Stopped: every page showing this conversation was closed while the call was open."
    if stopped_by == "user":
        return "Cancelled by the user."
    return "The call did not finish."
