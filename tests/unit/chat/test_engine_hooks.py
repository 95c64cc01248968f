"""The operator's hooks in the turn engine, with real subprocess hooks, an in-memory MCP server
and a scripted model: what a hook decides reaches the user (events), the model (its next
request) and the stored history."""

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
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.errors import Forbidden
from switchboard.files.artifacts import ArtifactStore
from switchboard.history import ToolReply, UserText
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import ToolCallRequest
from switchboard.policy import UNAVAILABLE, load_hooks
from switchboard.tools import ServerPool
from tests.support.scripted_llm import ScriptedLLM

HOOK = str(Path(__file__).resolve().parents[2] / "support" / "hooks" / "policy.py")
box = FastMCP("box")


@box.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    return f"echo: {text}"


@box.tool(annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    return a + b


def call(name: str, arguments: dict) -> ToolCallRequest:
    return ToolCallRequest(id="x", name=name, arguments=json.dumps(arguments))


def hook(event: str, *args: str, **extra) -> dict:
    return {
        "event": event,
        "handler": {"type": "command", "command": ["python", HOOK, *args], "timeout_s": 20},
        **extra,
    }


USER = User("a@example.com", frozenset({"users"}))


@pytest.fixture
async def make(tmp_path: Path):
    pools, built = [], []

    async def build(llm: ScriptedLLM, *entries: dict, raw: str | None = None):
        folder = tmp_path / "overrides"
        folder.mkdir(exist_ok=True)
        (folder / "hooks.json").write_text(raw if raw is not None else json.dumps({"hooks": list(entries)}))
        config = AppConfig(
            mcp=McpConfig(servers={"box": ServerConfig(url="http://in-memory.invalid/mcp", approval="never")}),
            llm=LLMConfig(default_model="m", models=[ModelConfig(name="m", model="openai/m")]),
            groups=GroupsConfig(),
            compliance=ComplianceLevels(),
            system_prompt="be brief",
            hooks=load_hooks(tmp_path / "none", folder),
        )
        pool = ServerPool(config.mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"box": box})
        pools.append(pool)
        pool.start()
        await pool.wait_settled(10)
        files = ArtifactStore(tmp_path / "files")
        calls = CallRunner(pool, files, config.compliance, CallSettings(approval_timeout_s=20))
        engine = ChatEngine(
            llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
        )
        built.append(calls)
        return engine, Conversations(None, files)  # type: ignore[arg-type]

    build.calls = built  # type: ignore[attr-defined]  # the call runners built, for tests of one call
    yield build
    for pool in pools:
        await pool.stop()


def new_session() -> TurnState:
    return TurnState(user=USER, conversation=ConversationState(owner=USER.email, incognito=True))


async def turn(engine, conversations, session, content="hi", approve=None):
    events = []
    request = ChatMessage(type="chat", content=content)
    async for event in engine.run_turn(session, request, conversations.recorder):
        events.append(event)
        if event.type == "approval_request":
            answer = approve(event) if approve else ApprovalAnswer(True)
            session.questions.answer_approval(event.call_id, answer)
    return events


def tool_message(llm: ScriptedLLM) -> str:
    return next(m for m in llm.sent[1] if m["role"] == "tool")["content"]


async def test_a_pre_tool_deny_reaches_the_user_and_the_model_and_the_tool_never_runs(make):
    llm = ScriptedLLM([call("box_echo", {"text": "hello"})], ["I may not."])
    engine, conversations = await make(llm, hook("pre_tool", "deny", "echo is off limits", match={"tools": ["box_e*"]}))
    events = await turn(engine, conversations, new_session())
    result = next(e for e in events if e.type == "tool_result")
    assert not result.ok and "Denied by policy: echo is off limits" in result.content
    assert not any(e.type == "tool_start" for e in events)
    assert "echo is off limits" in tool_message(llm) and "echo: hello" not in tool_message(llm)


async def test_modified_arguments_run_only_after_the_users_approval_although_the_tool_is_auto_approved(make):
    llm = ScriptedLLM([call("box_echo", {"text": "card 4111"})], ["ok"])
    engine, conversations = await make(llm, hook("pre_tool", "redact", "4111"))
    asked = []
    events = await turn(engine, conversations, new_session(), approve=lambda e: asked.append(e) or ApprovalAnswer(True))
    (request,) = asked
    assert request.arguments == {"text": "card [redacted]"} and "policy hook changed the arguments" in request.reason
    result = next(e for e in events if e.type == "tool_result")
    assert result.ok and result.content == "echo: card [redacted]"
    assert "4111" not in tool_message(llm)


async def test_modified_arguments_that_do_not_fit_the_schema_never_run(make):
    llm = ScriptedLLM([call("box_add", {"a": 1, "b": 2})], ["ok"])
    engine, conversations = await make(llm, hook("pre_tool", "modify_args", '{"a": "one"}'))
    events = await turn(engine, conversations, new_session())
    result = next(e for e in events if e.type == "tool_result")
    assert not result.ok and "no longer fit the tool" in result.content
    assert not any(e.type in ("tool_start", "approval_request") for e in events)


async def test_an_ask_needs_the_user_and_a_no_stops_the_call(make):
    llm = ScriptedLLM([call("box_echo", {"text": "x"})], ["ok"])
    engine, conversations = await make(llm, hook("pre_tool", "ask", "a person must look at echoes"))
    events = await turn(engine, conversations, new_session(), approve=lambda e: ApprovalAnswer(False))
    request = next(e for e in events if e.type == "approval_request")
    assert "a person must look at echoes" in request.reason
    assert not next(e for e in events if e.type == "tool_result").ok and not any(e.type == "tool_start" for e in events)


async def test_permission_request_can_deny_before_the_user_is_asked(make):
    llm = ScriptedLLM([call("box_echo", {"text": "x"})], ["ok"])
    engine, conversations = await make(
        llm, hook("pre_tool", "ask", "look"), hook("permission_request", "exit2", "approvals are closed tonight")
    )
    events = await turn(engine, conversations, new_session())
    assert not any(e.type == "approval_request" for e in events)
    assert "approvals are closed tonight" in next(e for e in events if e.type == "tool_result").content


async def test_the_user_cannot_edit_back_what_a_hook_changed(make):
    llm = ScriptedLLM([call("box_echo", {"text": "card 4111"})], ["ok"])
    engine, conversations = await make(llm, hook("pre_tool", "redact", "4111"))
    events = await turn(
        engine, conversations, new_session(), approve=lambda e: ApprovalAnswer(True, arguments={"text": "card 4111"})
    )
    result = next(e for e in events if e.type == "tool_result")
    assert not result.ok and "edited arguments" in result.content and not any(e.type == "tool_start" for e in events)


async def test_a_post_tool_modify_changes_what_the_user_the_model_and_the_history_see(make):
    llm = ScriptedLLM([call("box_echo", {"text": "secret-word"})], ["ok"])
    engine, conversations = await make(llm, hook("post_tool", "redact", "secret-word"))
    session = new_session()
    events = await turn(engine, conversations, session)
    result = next(e for e in events if e.type == "tool_result")
    assert result.ok and result.content == "echo: [redacted]"
    assert "secret-word" not in tool_message(llm)
    reply = next(r for r in session.conversation.history if isinstance(r, ToolReply))
    assert "secret-word" not in reply.text and "echo: [redacted]" in reply.text


async def test_a_prompt_submit_modify_changes_what_the_model_and_the_history_see(make):
    llm = ScriptedLLM(["fine"])
    engine, conversations = await make(llm, hook("prompt_submit", "redact", "hunter2"))
    session = new_session()
    await turn(engine, conversations, session, content="my password is hunter2")
    assert llm.sent[0][-1]["content"] == "my password is [redacted]"
    first = session.conversation.history[0]
    assert isinstance(first, UserText) and first.text == "my password is [redacted]"


async def test_a_prompt_submit_deny_refuses_the_turn_before_anything_runs(make):
    llm = ScriptedLLM(["never"])
    engine, conversations = await make(llm, hook("prompt_submit", "deny", "no questions about payroll"))
    session = new_session()
    with pytest.raises(Forbidden, match="no questions about payroll"):
        await engine.prepare(session, ChatMessage(type="chat", content="payroll?"))
    events = await turn(engine, conversations, session)
    assert events[0].type == "error" and "no questions about payroll" in events[0].message
    assert llm.sent == []


async def test_a_pre_model_failure_ends_the_turn_saying_the_check_is_unavailable(make):
    llm = ScriptedLLM(["never"])
    engine, conversations = await make(llm, hook("pre_model", "crash"))
    events = await turn(engine, conversations, new_session())
    assert any(e.type == "error" and UNAVAILABLE in e.message for e in events)
    assert events[-1].type == "message_done" and events[-1].finish_reason == "error" and llm.sent == []


async def test_a_broken_hooks_file_denies_every_tool_call_and_turn(make):
    llm = ScriptedLLM(["never"])
    engine, conversations = await make(llm, raw='{"hooks": [{"event": "pre_tool", "handler": {"type": "command"}}]}')
    events = await turn(engine, conversations, new_session())
    assert events[0].type == "error" and UNAVAILABLE in events[0].message and llm.sent == []


async def test_each_hooks_decision_is_kept_with_the_call(make):
    llm = ScriptedLLM([call("box_echo", {"text": "x"})], ["ok"])
    await make(llm, hook("pre_tool", "allow"), hook("post_tool", "redact", "x"))
    session = new_session()
    session.progress.model = "m"
    executed = await make.calls[-1].run(
        call("box_echo", {"text": "x"}), turn=session, offered={"box_echo"}, emit=_ignore
    )
    assert [(r.event, r.decision) for r in executed.hooks] == [("pre_tool", "allow"), ("post_tool", "modify")]
    assert all(r.duration_ms > 0 for r in executed.hooks)


async def _ignore(event) -> None:
    return None


async def test_a_background_tasks_late_result_passes_post_tool_too(tmp_path):
    from switchboard.chat.policy_points import task_result
    from switchboard.policy import Hooks
    from switchboard.tools import ToolOutcome

    folder = tmp_path / "overrides"
    folder.mkdir()
    (folder / "hooks.json").write_text(json.dumps({"hooks": [hook("post_tool", "redact", "secret-word")]}))
    hooks = Hooks(load_hooks(tmp_path / "none", folder))
    outcome = await task_result(hooks, USER.email, "c1", "box_echo", "box", ToolOutcome(ok=True, text="a secret-word"))
    assert outcome.ok and outcome.text == "a [redacted]"
