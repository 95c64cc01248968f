"""Skills (MCP extension `io.modelcontextprotocol/skills`) offered to the model.

The model sees one tool whose description lists the skills of the servers this user may use in
this conversation (name and description, nothing more), and uses a skill by name: the host then
reads the skill's `SKILL.md`, verified against the server's listing, and hands the model its
instructions and the names of the skill's other files, which it reads with a second tool. No
file is read before the model uses the skill; a file that fails verification is never used.
Both tools are answered by the host (server "switchboard"), like the gateway's search. Reading a
server's skill asks for the same approval as that server's tools (`approval: always`: the user
says yes first), and its text is cut for the event and the store as a tool result is."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import SwitchboardError
from ..llm.types import ToolCallRequest
from ..tools import ServerPool
from ..tools.skills import SkillEntry
from .calls.host_args import parse_arguments
from .calls.results import frame_for_model, limit_text
from .calls.runner import CallRunner, ExecutedCall
from .events import ServerEvent, ToolResultEvent, ToolStart
from .turn_state import TurnState

__all__ = ["SKILL_TOOLS", "SkillShelf"]

SKILLS_SERVER = "switchboard"
USE, READ = "switchboard_use_skill", "switchboard_read_skill_file"
SKILL_TOOLS = (USE, READ)
_RESULT_CHARS = 40_000
_LISTED_CHARS = 300  # of each skill's description, in the tool's description

Emit = Callable[[ServerEvent], Awaitable[None]]


class SkillShelf:
    """One turn's skills, keyed by the name the model uses (`server/name` when two servers share one)."""

    def __init__(self, pool: ServerPool, user: str | None, entries: list[SkillEntry], calls: CallRunner) -> None:
        self._pool, self._user, self._calls = pool, user, calls
        counts: dict[str, int] = {}
        for entry in entries:
            counts[entry.name] = counts.get(entry.name, 0) + 1
        self._skills = {(e.name if counts[e.name] == 1 else f"{e.server}/{e.name}"): e for e in entries}
        self._loaded: set[str] = set()  # SKILL.md verified in this turn

    def __bool__(self) -> bool:
        return bool(self._skills)

    @property
    def names(self) -> list[str]:
        return sorted(self._skills)

    @staticmethod
    def handles(name: str) -> bool:
        return name in SKILL_TOOLS

    def schemas(self) -> list[dict[str, Any]]:
        listed = "\n".join(
            f"- {key}: {entry.description[:_LISTED_CHARS]}" for key, entry in sorted(self._skills.items())
        )
        return [
            {
                "type": "function",
                "function": {
                    "name": USE,
                    "description": (
                        "Use a skill: instructions (and files) for a kind of task. Call it when the task fits "
                        f"one of these skills, then follow its instructions:\n{listed}"
                    ),
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "skill": {"type": "string", "enum": self.names, "description": "The skill's name."}
                        },
                        "required": ["skill"],
                    },
                },
            },
            {
                "type": "function",
                "function": {
                    "name": READ,
                    "description": f"Read one of the files a skill names (after {USE}), by its path within the skill.",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "skill": {"type": "string", "enum": self.names},
                            "path": {
                                "type": "string",
                                "description": "The file's path within the skill, e.g. references/FORMS.md",
                            },
                        },
                        "required": ["skill", "path"],
                    },
                },
            },
        ]

    async def use(self, key: str) -> str:
        """The skill's SKILL.md, verified, and the paths of its other files."""
        entry = self._entry(key)
        text = await self._pool.read_skill_file(entry, entry.uri, self._user)
        self._loaded.add(key)
        others = [f.uri[len(entry.folder) :] for f in entry.files or () if f.uri != entry.uri]
        if entry.files is None:
            more = f"\n\n(Other files of this skill may be read with {READ} by their path.)"
        elif others:
            more = (
                f"\n\nFiles of this skill (read them with {READ} when the instructions need them): {', '.join(others)}"
            )
        else:
            more = ""
        return text + more

    async def read(self, key: str, path: str) -> str:
        entry = self._entry(key)
        if not path or ".." in path.split("/") or "://" in path:
            raise _Refused(f"'{path}' is not a path within the skill '{key}'")
        if key not in self._loaded:  # a file of a skill whose SKILL.md fails verification is never used
            await self.use(key)
        return await self._pool.read_skill_file(entry, entry.folder + path.lstrip("/"), self._user)

    def _entry(self, key: object) -> SkillEntry:
        entry = self._skills.get(key) if isinstance(key, str) else None
        if entry is None:
            raise _Refused(
                f"There is no skill named {json.dumps(key)} here; the skills are: {', '.join(sorted(self._skills))}"
            )
        return entry

    async def run(self, call: ToolCallRequest, emit: Emit, turn: TurnState) -> ExecutedCall:
        started = time.monotonic()
        arguments, problem = parse_arguments(call.arguments)
        if arguments is None:
            return self._answer(
                call, {}, False, f"The arguments were not valid JSON ({problem}); send a JSON object.", started
            )
        approval = None
        try:
            entry = self._entry(arguments.get("skill"))
        except _Refused as exc:
            return self._answer(call, arguments, False, str(exc), started)
        config = self._pool.registry.config_of(entry.server)
        allowance = f"{USE}@{entry.server}"
        if config is not None and config.approval == "always" and allowance not in turn.conversation.allowed_tools:
            answer = await self._calls.ask(
                call.id,
                call.name,
                SKILLS_SERVER,
                arguments,
                (
                    f"the skill comes from the server '{entry.server}', whose tools always need approval; reading it "
                    "sends the server a request"
                ),
                turn,
                emit,
                editable=False,
            )
            if not answer.approved:
                return self._answer(
                    call,
                    arguments,
                    False,
                    answer.reason or "The user denied reading this skill; do not retry it unasked.",
                    started,
                )
            if answer.remember:
                turn.allow(allowance)
            approval = {"answer": "remember" if answer.remember else "approve", "edited": False}
        await emit(
            ToolStart(call_id=call.id, tool=call.name, server=SKILLS_SERVER, arguments=arguments, approval=approval)
        )
        try:
            if call.name == USE:
                text = await self.use(arguments.get("skill"))  # type: ignore[arg-type]
            else:
                text = await self.read(arguments.get("skill"), str(arguments.get("path") or ""))  # type: ignore[arg-type]
        except _Refused as exc:
            return self._answer(call, arguments, False, str(exc), started)
        except SwitchboardError as exc:
            return self._answer(call, arguments, False, exc.message, started)
        executed = self._answer(call, arguments, True, text, started)
        if approval is not None:
            executed.approval = approval
            executed.event = executed.event.model_copy(update={"approval": approval})
        return executed

    def _answer(
        self, call: ToolCallRequest, arguments: dict[str, Any], ok: bool, text: str, started: float
    ) -> ExecutedCall:
        """The result as a tool's: the event (and the store) get at most the tool results' cap, marked as cut."""
        shown = limit_text(text, self._calls.settings.max_result_event_chars)
        event = ToolResultEvent(
            call_id=call.id,
            tool=call.name,
            server=SKILLS_SERVER,
            ok=ok,
            content=shown,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        return ExecutedCall(call, event, frame_for_model(call.name, ok, text, _RESULT_CHARS), arguments)


class _Refused(Exception):
    """The model named no skill, or a path outside the skill: told so, as a failed result."""
