"""The limits on background tasks (MCP Tasks, `io.modelcontextprotocol/tasks`) against a hostile
server: a user has at most `max_per_user` tasks running (a call past it fails, saying how many run
and what to do, and the server's task is cancelled), a server that asks to be polled every 50 ms is
polled at most once a second after the first quick looks, its status messages are cut before they
are stored and sent, and a task that keeps asking for input is stopped after the same number of
rounds as a call (SWITCHBOARD_MCP_INPUT_ROUNDS). A real FastMCP server with the tasks extension
over the in-memory transport, the turn hub with a scripted model, the store on SQLite (and
Postgres for the count of running tasks)."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

from switchboard.chat import CallRunner, CallSettings, ChatEngine, Conversations, TaskPoller, TaskSettings, TurnHub
from switchboard.chat.calls.results import CallResults
from switchboard.chat.events import ChatMessage, ElicitationRequest, TaskEvent
from switchboard.chat.running import RunningTurns
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.files.artifacts import ArtifactStore
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import ToolCallRequest
from switchboard.policy import Hooks
from switchboard.store import open_store
from switchboard.tools import ServerPool
from tests.support.scripted_llm import ScriptedLLM

ANN = User("ann@example.com", frozenset({"users"}))
BOB = User("bob@example.com", frozenset({"users"}))
STATUS_CHARS = 200_000  # what the hostile server puts in each status message
CANCELLED: list[str] = []
ASKED: list[int] = []  # the rounds of questions the hostile server has asked


def hostile() -> FastMCP:
    mcp = FastMCP("hostile")
    mcp.add_extension(TasksExtension(concurrency=20))
    often = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=50))
    QUESTION = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

    @mcp.tool(task=often, annotations={"readOnlyHint": True})
    async def chatty(ctx: Context) -> str:
        """Works forever, with a huge status message that changes every 50 ms."""
        step = 0
        while True:
            step += 1
            await ctx.report_progress(step, None, f"{step} " + "x" * STATUS_CHARS)
            await asyncio.sleep(0.05)

    @mcp.tool(task=often, annotations={"readOnlyHint": True})
    async def sleepy(label: str) -> str:
        """Works until cancelled."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            CANCELLED.append(label)
            raise
        return label

    @mcp.tool(task=often, annotations={"readOnlyHint": True})
    async def nagging() -> Any:
        """Asks again, whatever it is told."""
        ASKED.append(len(ASKED) + 1)
        ask = mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message=f"Question {ASKED[-1]}?", requested_schema=QUESTION)
        )
        return mcp_types.InputRequiredResult(
            input_requests={f"q{ASKED[-1]}": ask}, request_state=json.dumps({"n": ASKED[-1]})
        )

    return mcp


def call(name: str, **arguments: Any) -> ToolCallRequest:
    return ToolCallRequest(id="x", name=name, arguments=json.dumps(arguments))


class SameGroups:
    async def refresh(self, user: User) -> User:
        return user


@pytest.fixture
async def site(tmp_path: Path):
    made: list[Any] = []
    CANCELLED.clear()
    ASKED.clear()

    async def build(llm: ScriptedLLM, settings: TaskSettings, url: str | None = None) -> tuple[TurnHub, TaskPoller]:
        config = AppConfig(
            mcp=McpConfig(servers={"hostile": ServerConfig(url="http://in-memory.invalid/mcp", approval="never")}),
            llm=LLMConfig(default_model="m", models=[ModelConfig(name="m", model="openai/m")]),
            groups=GroupsConfig(),
            compliance=ComplianceLevels(),
            system_prompt="be brief",
        )
        pool = ServerPool(config.mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"hostile": hostile()})
        pool.start()
        await pool.wait_settled(10)
        files = ArtifactStore(tmp_path / "files")
        store = await open_store(url or f"sqlite+aiosqlite:///{tmp_path}/tasks.sqlite")
        conversations = Conversations(store, files)
        running = RunningTurns(conversations.ids)
        hooks = Hooks()
        poller = TaskPoller(
            pool,
            conversations,
            CallResults(pool, files, max_event_chars=50_000, max_model_chars=20_000),
            hooks,
            settings=settings,
            is_turn_running=running.is_running,
        )
        calls = CallRunner(pool, files, config.compliance, CallSettings(), tasks=poller, hooks=hooks)
        engine = ChatEngine(
            llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
        )
        hub = TurnHub(engine, conversations, SameGroups(), task_questions=poller.board, running=running)
        poller.start()
        made.append((pool, store, hub, poller))
        return hub, poller

    yield build
    for pool, store, hub, poller in made:
        await poller.stop()
        await hub.stop()
        await pool.stop()
        await store.close()


async def turn(hub: TurnHub, user: User, *calls: ToolCallRequest) -> list[dict[str, Any]]:
    """One answer in which the model makes these calls at once; its events up to `message_done`."""
    hub.engine._llm.scripts = [list(calls), ["Started."]]
    subscription = await hub.start(user, ChatMessage(type="chat", content="go"), f"conv-{secrets.token_hex(4)}")
    events = []
    async with asyncio.timeout(30):
        async for event in subscription:
            events.append(event.model_dump(mode="json", by_alias=True))
            if events[-1]["type"] == "message_done":
                return events
    return events


async def until(predicate: Any, timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_user_runs_at_most_max_per_user_tasks_and_the_call_past_it_says_so(site, request, backend):
    url = request.getfixturevalue("postgres_url") if backend == "postgres" else None
    hub, poller = await site(ScriptedLLM(), TaskSettings(max_per_user=3), url)

    # Four calls in one round, run at once: three tasks start, the fourth is refused.
    events = await turn(hub, ANN, *(call("hostile_sleepy", label=f"ann-{n}") for n in range(4)))

    results = [e for e in events if e["type"] == "tool_result"]
    started = [e for e in events if e["type"] == "task"]
    assert len(results) == 4 and len(started) == 3 and [r["ok"] for r in results].count(True) == 3
    refused = next(r for r in results if not r["ok"])
    assert refused["content"] == (
        "You have 3 background tasks running, the most one user may have (3), so the server's "
        "new task was cancelled. Wait for one of them to finish, or cancel one, then try again."
    )
    await until(lambda: len(CANCELLED) == 1)  # the server's task past the limit does not run on
    assert len(await poller.records.of_owner(ANN.email)) == 3 and poller.held() == 3

    # Another user is not held back by Ann's; Ann may start one again once one of hers has ended.
    bobs = await turn(hub, BOB, call("hostile_sleepy", label="bob"))
    assert [e["ok"] for e in bobs if e["type"] == "tool_result"] == [True]
    await poller.cancel(ANN.email, started[0]["task_id"])
    await until(lambda: poller.held() == 3)  # Ann's two and Bob's one
    again = await turn(hub, ANN, call("hostile_sleepy", label="ann-again"))
    assert [e["ok"] for e in again if e["type"] == "tool_result"] == [True]


async def test_a_server_asking_for_50_ms_polls_is_polled_at_most_once_a_second(site):
    hub, poller = await site(ScriptedLLM(), TaskSettings())
    began = time.monotonic()
    events = await turn(hub, ANN, call("hostile_sleepy", label="polled"))
    assert [e["status"] for e in events if e["type"] == "task"] == ["working"]
    await asyncio.sleep(3)
    elapsed = time.monotonic() - began
    # The first looks come quickly (0.05 s, doubling: five in 1.55 s), then one a second at most,
    # where the server's 50 ms would have made about 60 in 3 s. (A slower machine polls less.)
    assert 3 <= poller.polls <= 6 + elapsed, (poller.polls, elapsed)


async def test_a_servers_huge_status_messages_are_cut_before_they_are_stored_and_sent(site):
    hub, poller = await site(ScriptedLLM(), TaskSettings(max_status_chars=1000))
    with poller.board.listen(ANN.email) as heard:
        events = await turn(hub, ANN, call("hostile_chatty"))
        task_id = next(e for e in events if e["type"] == "task")["task_id"]
        told: list[TaskEvent] = []
        async with asyncio.timeout(30):
            while len(told) < 2:  # the message changes between any two polls: each poll tells the page
                event = await heard.get()
                if isinstance(event, TaskEvent) and event.message:
                    told.append(event)

    for event in told:
        assert event.message is not None and len(event.message) < 1100
        step = event.message.split()[0]
        assert event.message.endswith(f"… [cut: the status was {STATUS_CHARS + len(step) + 1:,} characters]")
    stored = await poller.records.get(task_id)
    assert (
        stored is not None and stored.message is not None and len(stored.message) < 1100 and "[cut: " in stored.message
    )


async def test_a_task_that_keeps_asking_is_stopped_after_the_input_rounds(site):
    hub, poller = await site(ScriptedLLM(), TaskSettings(input_rounds=3))
    with poller.board.listen(ANN.email) as heard:
        events = await turn(hub, ANN, call("hostile_nagging"))
        task_id = next(e for e in events if e["type"] == "task")["task_id"]
        asked: list[str] = []
        async with asyncio.timeout(60):
            while True:
                event = await heard.get()
                if isinstance(event, ElicitationRequest):
                    asked.append(event.message)
                    assert poller.board.answer(ANN.email, event.request_id, "accept", {"answer": "again?"})
                elif isinstance(event, TaskEvent) and event.status in ("completed", "failed", "cancelled"):
                    break

    assert asked == ["Question 1?", "Question 2?", "Question 3?"]
    assert event.status == "failed" and event.ok is False
    assert event.content == (
        "The task failed: server 'hostile' kept asking for input for more than 3 rounds and was "
        "stopped (the limit is SWITCHBOARD_MCP_INPUT_ROUNDS)"
    )
    stored = await hub.conversations.store.load(event.conversation_id)
    assert stored.messages[-1].role == "tool" and "kept asking for input" in stored.messages[-1].content
    assert (await poller.records.get(task_id)).status == "failed"
