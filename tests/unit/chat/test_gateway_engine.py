"""The tool gateway in the turn engine, in memory: a scripted model searches,
describes and calls real tools of FastMCP servers through the gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import FastMCP

from switchboard.chat import (
    ApprovalAnswer,
    CallRunner,
    CallSettings,
    ChatEngine,
    Conversations,
    ConversationState,
    TurnState,
)
from switchboard.chat.events import ChatMessage
from switchboard.chat.gateway import GATEWAY_TOOLS
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.files.artifacts import ArtifactStore
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import Completed, TextDelta, ToolCallRequest
from switchboard.tools import ServerPool

notes = FastMCP("notes")
WIPED: list[str] = []


@notes.tool(annotations={"readOnlyHint": True})
def read_note(title: str) -> str:
    """Read a saved note by its title."""
    return f"note {title}: buy milk"


@notes.tool(annotations={"destructiveHint": True})
def wipe_note(title: str) -> str:
    """Erase a saved note for good."""
    WIPED.append(title)
    return f"wiped {title}"


@notes.tool(annotations={"readOnlyHint": True})
def weather_forecast(city: str) -> str:
    """Tomorrow's weather forecast for a city."""
    return f"sunny in {city}"


vault = FastMCP("vault")


@vault.tool(annotations={"readOnlyHint": True})
def open_vault_note(title: str) -> str:
    """Read a secret note from the vault."""
    return "the secret"


class ScriptedLLM:
    def __init__(self, *scripts):
        self.scripts = list(scripts)
        self.tools: list[list[str]] = []

    async def stream(self, model, messages, tools, *, system=""):
        self.tools.append([t["function"]["name"] for t in tools or []])
        script = self.scripts.pop(0) if self.scripts else ["(nothing scripted)"]
        calls = [item for item in script if isinstance(item, ToolCallRequest)]
        for item in script:
            if isinstance(item, str):
                yield TextDelta(item)
        yield Completed(finish_reason="tool_calls" if calls else "stop", tool_calls=calls)


def call(name: str, arguments: dict) -> ToolCallRequest:
    return ToolCallRequest(id="x", name=name, arguments=json.dumps(arguments))


@pytest.fixture
async def make(tmp_path: Path):
    pools = []

    async def build(llm: ScriptedLLM, *, exposure: str = "gateway", threshold: int | None = None):
        servers = {
            "notes": ServerConfig(url="http://in-memory.invalid/mcp", approval="destructive"),
            "vault": ServerConfig(url="http://in-memory.invalid/mcp", groups=["admins"]),
        }
        model = ModelConfig(name="m", model="openai/m", tool_exposure=exposure, gateway_threshold_tokens=threshold)
        config = AppConfig(
            mcp=McpConfig(servers=servers),
            llm=LLMConfig(default_model="m", models=[model]),
            groups=GroupsConfig(),
            compliance=ComplianceLevels(),
            system_prompt="",
        )
        pool = ServerPool(
            config.mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"notes": notes, "vault": vault}
        )
        pools.append(pool)
        pool.start()
        await pool.wait_settled(10)
        files = ArtifactStore(tmp_path / "files")
        calls = CallRunner(pool, files, config.compliance, CallSettings(approval_timeout_s=2))
        engine = ChatEngine(
            llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
        )
        return engine, Conversations(None, files)  # type: ignore[arg-type]

    yield build
    for pool in pools:
        await pool.stop()


USER = User("a@example.com", frozenset({"users"}))


def session() -> ConversationState:
    return ConversationState(owner=USER.email, incognito=True)  # nothing stored


async def run(engine, conversations, conversation: ConversationState, approve: bool = True, **extra) -> list:
    events = []
    request = ChatMessage(type="chat", content="go", **extra)
    turn = TurnState(user=USER, conversation=conversation)
    async for event in engine.run_turn(turn, request, conversations.recorder):
        events.append(event)
        if event.type == "approval_request":
            turn.questions.answer_approval(event.call_id, ApprovalAnswer(approve))
    return events


def results(events) -> list:
    return [e for e in events if e.type == "tool_result"]


async def test_search_describe_call_runs_the_real_tool_with_approval(make):
    WIPED.clear()
    llm = ScriptedLLM(
        [call("switchboard_search_tools", {"query": "erase my note"})],
        [call("switchboard_describe_tool", {"name": "notes_wipe_note"})],
        [call("switchboard_call_tool", {"name": "notes_wipe_note", "arguments": {"title": "shopping"}})],
        ["Done."],
    )
    engine, conversations = await make(llm)

    events = await run(engine, conversations, session())

    assert llm.tools[0] == list(GATEWAY_TOOLS)  # the catalogue is not sent
    assert llm.tools[2] == [*GATEWAY_TOOLS, "notes_wipe_note"]  # described: offered directly afterwards
    search, describe, called = results(events)
    assert search.server == "switchboard" and json.loads(search.content)[0]["name"] == "notes_wipe_note"
    assert json.loads(describe.content)["input_schema"]["properties"]["title"]["type"] == "string"
    approval = next(e for e in events if e.type == "approval_request")
    start = [e for e in events if e.type == "tool_start"][-1]
    assert (approval.tool, start.tool, start.server) == ("notes_wipe_note", "notes_wipe_note", "notes")
    assert approval.call_id == start.call_id == called.call_id
    assert called.ok and called.tool == "notes_wipe_note" and called.server == "notes" and WIPED == ["shopping"]


async def test_a_denied_gateway_call_does_not_run(make):
    WIPED.clear()
    llm = ScriptedLLM([call("switchboard_call_tool", {"name": "notes_wipe_note", "arguments": {"title": "x"}})], ["ok"])
    engine, conversations = await make(llm)

    events = await run(engine, conversations, session(), approve=False)

    assert not results(events)[0].ok and WIPED == []


async def test_tools_outside_the_offered_set_cannot_be_found_described_or_called(make):
    llm = ScriptedLLM(
        [
            call("switchboard_search_tools", {"query": "secret vault note weather"}),
            call("switchboard_search_tools", {"query": "list"}),
            call("switchboard_describe_tool", {"name": "vault_open_vault_note"}),
            call("switchboard_call_tool", {"name": "vault_open_vault_note", "arguments": {"title": "a"}}),
            call("switchboard_call_tool", {"name": "notes_weather_forecast", "arguments": {"city": "Oslo"}}),
        ],
        ["ok"],
    )
    engine, conversations = await make(llm)

    # the user is not in "admins" (vault), and the chat's selection leaves out the forecast
    events = await run(engine, conversations, session(), tools=["notes_read_note", "notes_wipe_note"])

    search, listing, describe, vault_call, forecast_call = sorted(results(events), key=lambda e: events.index(e))
    found = [hit["name"] for hit in json.loads(search.content)]
    assert "vault_open_vault_note" not in found and "notes_weather_forecast" not in found
    assert json.loads(listing.content) == [{"server": "notes", "tools": 2, "description": ""}]
    assert not describe.ok and "no tool named" in describe.content
    assert not vault_call.ok and not forecast_call.ok
    assert "the secret" not in json.dumps([e.model_dump() for e in events])


async def test_list_forms_and_bare_names(make):
    llm = ScriptedLLM(
        [
            call("switchboard_search_tools", {"query": "list:notes"}),
            call("switchboard_call_tool", {"name": "read_note", "arguments": {"title": "t"}}),
        ],
        ["ok"],
    )
    engine, conversations = await make(llm)

    events = await run(engine, conversations, session())

    listing, read = sorted(results(events), key=lambda e: events.index(e))
    assert {hit["name"] for hit in json.loads(listing.content)} == {
        "notes_read_note",
        "notes_wipe_note",
        "notes_weather_forecast",
    }
    assert read.ok and read.tool == "notes_read_note" and "buy milk" in read.content


async def test_auto_exposure_follows_the_threshold_and_a_chat_can_override(make):
    llm = ScriptedLLM(["a"], ["b"], ["c"])
    engine, conversations = await make(llm, exposure="auto", threshold=10)
    await run(engine, conversations, session())
    await run(engine, conversations, session(), tool_exposure="all")

    engine2, conversations2 = await make(llm, exposure="auto", threshold=100_000)
    await run(engine2, conversations2, session())

    assert llm.tools[0] == list(GATEWAY_TOOLS)
    assert set(llm.tools[1]) == {"notes_read_note", "notes_wipe_note", "notes_weather_forecast"}
    assert set(llm.tools[2]) == set(llm.tools[1])
