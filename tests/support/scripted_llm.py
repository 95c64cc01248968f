"""An in-memory model stream for engine unit tests: each model call takes the
next script, a list of texts (streamed as pieces) and tool calls, or an
exception to raise.  What each call was sent is kept in OpenAI form."""

from __future__ import annotations

from typing import Any

from switchboard.llm.messages import to_openai
from switchboard.llm.types import Completed, TextDelta, ToolCallRequest

__all__ = ["ScriptedLLM"]


class ScriptedLLM:
    def __init__(self, *scripts: Any) -> None:
        self.scripts = list(scripts)
        self.sent: list[list[dict[str, Any]]] = []

    async def stream(self, model, messages, tools, *, system=""):
        self.sent.append(to_openai(system, messages))
        script = self.scripts.pop(0) if self.scripts else ["(nothing scripted)"]
        if isinstance(script, Exception):
            raise script
        calls = [item for item in script if isinstance(item, ToolCallRequest)]
        for item in script:
            if isinstance(item, str):
                yield TextDelta(item)
        yield Completed(finish_reason="tool_calls" if calls else "stop", tool_calls=calls)
