"""The turn hub on its in-process path (`LocalRelay`): a scripted in-memory model, a FastMCP server
over the in-memory transport and a real SQLite store, no sockets. Starting a turn, joining it
late (the events so far, then the rest live), answering its approval from anywhere, cancelling
it, one turn per conversation, and how it fails."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP

from switchboard.chat import (
    ApprovalAnswer,
    CallRunner,
    CallSettings,
    ChatEngine,
    Conversations,
    Preferences,
    TurnHub,
    UserLimits,
)
from switchboard.chat.conversation_ids import ConversationIds, id_key
from switchboard.chat.conversation_state import Seed
from switchboard.chat.events import ChatMessage
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.errors import Conflict, LLMError, LLMUnavailable, NotFound, StoreError, StoreUnavailable, TooMany
from switchboard.files.artifacts import ArtifactStore
from switchboard.history import UserText
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import ToolCallRequest
from switchboard.store import down_store, open_store
from switchboard.tools import ServerPool
from tests.support.scripted_llm import ScriptedLLM

ANN = User("ann@example.com", frozenset({"users"}))
BOB = User("bob@example.com", frozenset({"users"}))
GATES: dict[str, asyncio.Event] = {}
WIPED: list[str] = []

box = FastMCP("box")


@box.tool(annotations={"readOnlyHint": True})
async def wait(gate: str) -> str:
    await GATES[gate].wait()
    return f"{gate} opened"


@box.tool(annotations={"destructiveHint": True})
def wipe(what: str) -> str:
    WIPED.append(what)
    return f"wiped {what}"


def call(name: str, **arguments: Any) -> ToolCallRequest:
    return ToolCallRequest(id="x", name=name, arguments=json.dumps(arguments))


class SameGroups:
    async def refresh(self, user: User) -> User:
        return user


@pytest.fixture
async def make(tmp_path: Path):
    made: list[tuple[ServerPool, Any, TurnHub]] = []
    GATES.clear()
    WIPED.clear()

    async def build(llm: ScriptedLLM, *, grace_s: float = 30.0, limits: UserLimits | None = None, store: Any = None):
        config = AppConfig(
            mcp=McpConfig(servers={"box": ServerConfig(url="http://in-memory.invalid/mcp")}),
            llm=LLMConfig(default_model="m", models=[ModelConfig(name="m", model="openai/m")]),
            groups=GroupsConfig(),
            compliance=ComplianceLevels(),
            system_prompt="be brief",
        )
        pool = ServerPool(config.mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"box": box})
        pool.start()
        await pool.wait_settled(10)
        files = ArtifactStore(tmp_path / "files")
        store = store or await open_store(f"sqlite+aiosqlite:///{tmp_path}/db-{len(made)}.sqlite")
        calls = CallRunner(pool, files, config.compliance, CallSettings(approval_timeout_s=5))
        engine = ChatEngine(
            llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
        )
        # one secret for every hub, as for every process of a deployment: a name a client picks is the same id
        conversations = Conversations(store, files, ids=ConversationIds(id_key("one-deployment-secret")))
        hub = TurnHub(engine, conversations, SameGroups(), grace_s=grace_s, limits=limits)
        made.append((pool, store, hub))
        return hub

    yield build
    for gate in GATES.values():
        gate.set()
    for pool, store, hub in made:
        await hub.stop()
        await pool.stop()
        await store.close()


class Reader:
    """One listener's events, read as far as asked (as dicts)."""

    def __init__(self, subscription: Any) -> None:
        self._events = aiter(subscription)

    async def until(self, kind: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        seen = []
        async with asyncio.timeout(timeout):
            async for raw in self._events:
                event = json.loads(raw) if isinstance(raw, str) else raw.model_dump(mode="json", by_alias=True)
                seen.append(event)
                if event["type"] == kind:
                    return seen
        return seen  # the turn ended first

    async def close(self) -> None:
        await self._events.aclose()


def chat(content: str = "go", **fields: Any) -> ChatMessage:
    return ChatMessage(type="chat", content=content, **fields)


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events if e["type"] != "render"]


async def test_a_turn_runs_in_its_conversation_is_stored_and_frees_it(make):
    GATES["g"] = asyncio.Event()
    GATES["g"].set()
    hub = await make(ScriptedLLM([call("box_wait", gate="g")], ["Done."]))

    events = await Reader(await hub.start(ANN, chat(conversation_id="conv-hub-1"), "current")).until("message_done")

    assert types(events) == ["conversation", "tool_start", "tool_result", "token", "message_done"]
    done = events[-1]
    assert done["finish_reason"] == "stop" and events[2]["content"] == "g opened"
    stored = await hub.conversations.store.load(done["conversation_id"])
    assert [m.role for m in stored.messages] == ["user", "assistant", "tool", "assistant"]
    assert stored.conversation.owner == ANN.email and stored.conversation.leaf_id == done["message_id"]
    await asyncio.sleep(0)
    assert hub.running(ANN.email, "conv-hub-1") is None and hub.tasks() == []


async def test_attach_gets_the_events_so_far_then_the_rest_live(make):
    GATES["g"] = asyncio.Event()
    hub = await make(ScriptedLLM(["Let me ", "look.", call("box_wait", gate="g")], ["Open now."]))
    first = Reader(await hub.start(ANN, chat(conversation_id="conv-hub-2"), "current"))
    await first.until("tool_start")

    late = hub.attach(ANN, "conv-hub-2")
    assert late is not None and hub.attach(BOB, "conv-hub-2") is None  # another user's is not found
    second = Reader(late)
    GATES["g"].set()
    replayed = await second.until("message_done")
    live = await first.until("message_done")

    assert types(replayed) == ["conversation", "token", "tool_start", "tool_result", "token", "message_done"]
    assert replayed[1]["text"] == "Let me look."  # the tokens so far as one event
    assert types(live)[-3:] == ["tool_result", "token", "message_done"]
    assert replayed[-1] == live[-1]


async def test_one_turn_per_conversation_at_a_time(make):
    GATES["g"] = asyncio.Event()
    hub = await make(ScriptedLLM([call("box_wait", gate="g")], ["one"], ["two"]))
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-hub-3"), "current"))

    with pytest.raises(Conflict):
        await hub.start(ANN, chat(conversation_id="conv-hub-3"), "current")
    other = Reader(await hub.start(BOB, chat(conversation_id="conv-hub-3"), "current"))  # Bob's own conv-hub-3
    assert (await other.until("message_done"))[-1]["finish_reason"] == "stop"

    GATES["g"].set()
    await reader.until("message_done")
    await asyncio.sleep(0)
    again = Reader(await hub.start(ANN, chat("more", conversation_id="conv-hub-3"), "current"))
    assert (await again.until("message_done"))[-1]["finish_reason"] == "stop"


async def test_an_approval_is_answered_through_the_hub_by_its_user_only(make):
    hub = await make(ScriptedLLM([call("box_wipe", what="notes")], ["Wiped."]))
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-hub-4"), "current"))
    asked = (await reader.until("approval_request"))[-1]

    with pytest.raises(NotFound):
        await hub.answer_approval(BOB, asked["call_id"], ApprovalAnswer(approved=True))
    with pytest.raises(NotFound):
        await hub.answer_approval(ANN, "call_nobody_made", ApprovalAnswer(approved=True))
    await hub.answer_approval(ANN, asked["call_id"], ApprovalAnswer(approved=True))
    events = await reader.until("message_done")

    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] and WIPED == ["notes"]
    with pytest.raises(NotFound):  # answered already
        await hub.answer_approval(ANN, asked["call_id"], ApprovalAnswer(approved=True))


async def test_cancel_stops_the_call_and_stores_a_cancelled_answer(make):
    GATES["never"] = asyncio.Event()
    hub = await make(ScriptedLLM(["Waiting."], [call("box_wait", gate="never")]))
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-hub-5"), "current"))
    await reader.until("message_done")
    reader = Reader(await hub.start(ANN, chat("again", conversation_id="conv-hub-5"), "current"))
    await reader.until("tool_start")

    assert await hub.cancel(ANN, "conv-hub-5")
    done = (await reader.until("message_done"))[-1]

    assert done["finish_reason"] == "cancelled"
    stored = await hub.conversations.store.load(done["conversation_id"])
    roles = [(m.role, m.data.get("finish_reason")) for m in stored.messages]
    assert roles == [
        ("user", None),
        ("assistant", "stop"),
        ("user", None),
        ("assistant", None),
        ("tool", None),
        ("assistant", "cancelled"),
    ]
    assert stored.messages[4].content == "Cancelled by the user."
    assert not await hub.cancel(ANN, "conv-hub-5")  # nothing runs there any more


async def test_a_refused_start_leaves_nothing_held(make):
    hub = await make(ScriptedLLM(["ok"]), limits=UserLimits(turns=1))
    with pytest.raises(LLMUnavailable):
        await hub.start(ANN, chat(model="no-such-model", conversation_id="conv-hub-6"), "current")
    GATES["g"] = asyncio.Event()
    hub.engine._llm.scripts = [[call("box_wait", gate="g")], ["ok"]]
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-hub-6"), "current"))  # not held by the refusal
    with pytest.raises(TooMany):
        await hub.start(ANN, chat(conversation_id="conv-hub-7"), "current")  # one answer at a time for Ann
    GATES["g"].set()
    await reader.until("message_done")


async def test_a_store_that_is_down_refuses_the_turn_and_holds_nothing(make):
    hub = await make(ScriptedLLM(["ok"]), store=down_store("sqlite+aiosqlite:///nowhere.db", StoreUnavailable("down")))
    for _ in range(2):
        with pytest.raises(StoreUnavailable):
            await hub.start(ANN, chat(conversation_id="conv-hub-8"), "current")


async def test_a_model_that_fails_ends_the_turn_with_an_error_and_stores_it(make):
    hub = await make(ScriptedLLM(LLMError("the provider is down")))
    events = await Reader(await hub.start(ANN, chat(conversation_id="conv-hub-9"), "current")).until("message_done")

    assert types(events) == ["conversation", "error", "message_done"] and events[-1]["finish_reason"] == "error"
    stored = await hub.conversations.store.load(events[-1]["conversation_id"])
    assert stored.messages[-1].data["error"]["message"] == "the provider is down"


@pytest.mark.parametrize("reply", [["Hello there."], [call("box_wipe", what="x")], LLMError("the provider is down")])
async def test_the_first_commit_runs_beside_the_model_call_and_a_failed_one_stops_the_turn(make, tmp_path, reply):
    """The question is stored while the first model request is sent; nothing is announced before
    it is stored, and a question that could not be stored ends the turn there (no call runs)."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/failing.sqlite")
    append = store.append

    async def failing(*args, **kwargs):
        await asyncio.sleep(0.05)  # the model has answered by now
        raise StoreError("Could not save the message: the conversation store failed (disk I/O error).")

    store.append = failing
    llm = ScriptedLLM(reply)
    hub = await make(llm, store=store)

    events = await Reader(await hub.start(ANN, chat(conversation_id="conv-hub-first"), "current")).until("error")

    assert types(events) == ["error"] and "store failed" in events[0]["message"]
    assert len(llm.sent) == 1 and WIPED == []  # the one model call sent beside the commit, and no tool call
    store.append = append
    assert await store.load(hub.conversations.ids.scoped(ANN.email, "conv-hub-first")) is None


async def test_a_quick_call_is_stored_with_its_result_and_a_long_one_while_it_runs(make, tmp_path):
    """Three transactions for a tool turn whose call ends within 0.2 s (question; call with result;
    answer); a longer call's message is stored while it still runs."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/counted.sqlite")
    appended: list[list[str]] = []
    append = store.append

    async def counting(conversation_id, new, **kwargs):
        appended.append([m.role for m in new])
        return await append(conversation_id, new, **kwargs)

    store.append = counting
    GATES["quick"], GATES["slow"] = asyncio.Event(), asyncio.Event()
    GATES["quick"].set()
    hub = await make(
        ScriptedLLM([call("box_wait", gate="quick")], ["Done."], [call("box_wait", gate="slow")], ["Also."]),
        store=store,
    )

    events = await Reader(await hub.start(ANN, chat(conversation_id="conv-quick"), "current")).until("message_done")
    assert appended == [["user"], ["assistant", "tool"], ["assistant"]]

    appended.clear()
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-slow"), "current"))
    await reader.until("tool_start")
    await asyncio.sleep(0.5)  # the call still waits for its gate
    assert appended == [["user"], ["assistant"]]
    stored = await store.load(hub.conversations.ids.scoped(ANN.email, "conv-slow"))
    assert stored.messages[-1].data["tool_calls"][0]["name"] == "box_wait"
    GATES["slow"].set()
    await reader.until("message_done")
    assert appended == [["user"], ["assistant"], ["tool"], ["assistant"]]
    assert events[-1]["finish_reason"] == "stop"


async def test_the_next_model_request_is_sent_while_the_round_s_result_is_stored(make, tmp_path):
    """The tool result goes out once stored, before any event of the next model call, but that
    call does not wait for the commit to be sent."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/slow.sqlite")
    append = store.append
    sent_when_stored: list[int] = []

    async def slow(conversation_id, new, **kwargs):
        if any(m.role == "tool" for m in new):
            await asyncio.sleep(0.3)
            sent_when_stored.append(len(llm.sent))
        return await append(conversation_id, new, **kwargs)

    store.append = slow
    GATES["g"] = asyncio.Event()
    GATES["g"].set()
    llm = ScriptedLLM([call("box_wait", gate="g")], ["Done."])
    hub = await make(llm, store=store)

    events = await Reader(await hub.start(ANN, chat(conversation_id="conv-overlap"), "current")).until("message_done")

    assert types(events) == ["conversation", "tool_start", "tool_result", "token", "message_done"]
    assert sent_when_stored == [2]  # the second model request was out before the result was stored
    stored = await store.load(hub.conversations.ids.scoped(ANN.email, "conv-overlap"))
    assert [m.role for m in stored.messages] == ["user", "assistant", "tool", "assistant"]


async def test_a_result_stored_while_the_turn_is_stopped_is_still_announced(make, tmp_path):
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path}/stop.sqlite")
    append = store.append
    storing = asyncio.Event()

    async def slow(conversation_id, new, **kwargs):
        if any(m.role == "tool" for m in new):
            storing.set()
            await asyncio.sleep(0.3)
        return await append(conversation_id, new, **kwargs)

    store.append = slow
    GATES["g"] = asyncio.Event()
    GATES["g"].set()
    GATES["never"] = asyncio.Event()
    hub = await make(ScriptedLLM([call("box_wait", gate="g")], [call("box_wait", gate="never")]), store=store)
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-stop"), "current"))
    await asyncio.wait_for(storing.wait(), 10)
    hub.running(ANN.email, hub.conversations.ids.scoped(ANN.email, "conv-stop")).stop("user")

    events = await reader.until("message_done")

    assert types(events)[-2:] == ["tool_result", "message_done"] and events[-1]["finish_reason"] == "cancelled"
    assert events[-2]["content"] == "g opened"


async def test_a_crash_inside_the_turn_is_an_error_and_a_message_done(make):
    hub = await make(ScriptedLLM(RuntimeError("a bug")))
    events = await Reader(await hub.start(ANN, chat(conversation_id="conv-hub-10"), "current")).until("message_done")

    assert types(events)[-2:] == ["error", "message_done"]
    assert events[-2]["code"] == "internal" and "a bug" not in events[-2]["message"]
    await asyncio.sleep(0)
    assert hub.running(ANN.email, "conv-hub-10") is None


async def test_a_turn_every_listener_left_is_stopped_after_the_grace(make):
    GATES["never"] = asyncio.Event()
    hub = await make(ScriptedLLM([call("box_wait", gate="never")]), grace_s=0.05)
    reader = Reader(await hub.start(ANN, chat(conversation_id="conv-hub-11"), "current"))
    await reader.until("tool_start")
    turn = hub.running(ANN.email, "conv-hub-11")
    await reader.close()  # the page went away

    async with asyncio.timeout(5):
        await asyncio.gather(*hub.tasks(), return_exceptions=True)
    assert turn.state.stop.stopped_by == "abandoned"
    stored = await hub.conversations.store.load(turn.conversation_id)
    assert (
        stored.messages[-2].content.startswith("Stopped: every page")
        and stored.messages[-1].data["finish_reason"] == "cancelled"
    )


async def test_a_seeded_turn_with_nobody_to_ask_refuses_approvals_and_keeps_nothing(make):
    llm = ScriptedLLM([call("box_wipe", what="everything")], ["I could not."])
    hub = await make(llm)
    nobody = Preferences(approvals="refuse", refusal="Nobody may approve here.", elicitations="decline")
    seed = Seed(history=(UserText(id="h1", text="earlier question"),))

    events = await Reader(
        await hub.start(ANN, chat("wipe it", incognito=True), "current", preferences=nobody, seed=seed)
    ).until("message_done")

    assert "approval_request" not in types(events) and WIPED == []
    result = next(e for e in events if e["type"] == "tool_result")
    assert not result["ok"] and result["content"] == "Nobody may approve here."
    assert [m["content"] for m in llm.sent[0] if m["role"] == "user"] == ["earlier question", "wipe it"]
    assert await hub.conversations.store.get_conversation(events[-1]["conversation_id"]) is None
    assert hub.conversations._memory.count(ANN.email) == 0
