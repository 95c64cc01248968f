"""The operator's policy hooks (hooks.json): loading (config.py), the events hooks are given
(events.py), their handlers (handlers.py, cedar.py), and running a point's hooks into one
Verdict (runner.py). The chat core calls `Hooks.run` at each point; nothing here knows chat."""

from .config import HookSet, load_hooks
from .decisions import FAIL_CLOSED, POINTS, Decision, HookFailure, HookRecord, Verdict
from .events import RESULT_CAP_CHARS, Facts, event_of
from .runner import UNAVAILABLE, Hooks

__all__ = [
    "FAIL_CLOSED",
    "POINTS",
    "RESULT_CAP_CHARS",
    "UNAVAILABLE",
    "Decision",
    "Facts",
    "HookFailure",
    "HookRecord",
    "HookSet",
    "Hooks",
    "Verdict",
    "event_of",
    "load_hooks",
]
