"""The file store never holds up the event loop: an artifact a tool makes and a file a user
attaches go to (or come from) the store in a worker thread, so another user's turn keeps
running while S3 takes its time. The slow store here is the outer boundary (a `FileBackend`
whose first write or read waits until the test lets it go); the test lets it go from a
coroutine on the loop, which can only run while the loop is free."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from fastmcp import FastMCP

from switchboard.chat import CallRunner, CallSettings, ChatEngine, Conversations, ConversationState, TurnState
from switchboard.chat.events import ChatMessage
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.files.artifacts import ArtifactStore
from switchboard.files.backends import LocalFiles
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import ToolCallRequest
from switchboard.tools import ServerPool
from tests.support.scripted_llm import ScriptedLLM

box = FastMCP("box")
WAIT_S = 20.0  # how long the store waits for the loop before it gives up (only when the loop is blocked)


@box.tool(annotations={"readOnlyHint": True})
def report() -> dict[str, object]:
    return {"results": "made", "artifacts": [{"name": "report.txt", "text": "the report"}]}


class SlowFiles(LocalFiles):
    """A folder whose first write (or read) of a key with this suffix waits until `go` is set, as
    a slow S3 would."""

    def __init__(self, root: Path, *, writes: str = "", reads: str = "") -> None:
        super().__init__(root)
        self.writes, self.reads, self.started, self.go = writes, reads, threading.Event(), threading.Event()
        self.let_go_in_time: bool | None = None

    def _hold(self, key: str, suffix: str) -> None:
        if suffix and key.endswith(suffix) and not self.started.is_set():
            self.started.set()
            self.let_go_in_time = self.go.wait(WAIT_S)

    def write(self, key, data):  # type: ignore[no-untyped-def]
        self._hold(key, self.writes)
        super().write(key, data)

    def read(self, key):  # type: ignore[no-untyped-def]
        self._hold(key, self.reads)
        return super().read(key)


@pytest.fixture
async def engine(tmp_path: Path):
    pools = []

    async def build(llm: ScriptedLLM, files: ArtifactStore) -> ChatEngine:
        config = AppConfig(
            mcp=McpConfig(servers={"box": ServerConfig(url="http://in-memory.invalid/mcp", approval="never")}),
            llm=LLMConfig(default_model="m", models=[ModelConfig(name="m", model="openai/m")]),
            groups=GroupsConfig(),
            compliance=ComplianceLevels(),
            system_prompt="",
        )
        pool = ServerPool(config.mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"box": box})
        pools.append(pool)
        pool.start()
        await pool.wait_settled(10)
        calls = CallRunner(pool, files, config.compliance, CallSettings(approval_timeout_s=2))
        return ChatEngine(
            llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
        )

    yield build
    for pool in pools:
        await pool.stop()


USER = User("a@example.com", frozenset({"users"}))


async def _meanwhile(slow: SlowFiles) -> None:
    """Another user's work on the loop: it lets the store go once the store has started."""
    await asyncio.to_thread(slow.started.wait, WAIT_S)
    slow.go.set()


async def _run(engine: ChatEngine, files: ArtifactStore, request: ChatMessage) -> list[object]:
    turn = TurnState(user=USER, conversation=ConversationState(owner=USER.email, incognito=True))
    recorder = Conversations(None, files).recorder  # type: ignore[arg-type]  # incognito: nothing stored
    return [e async for e in engine.run_turn(turn, request, recorder)]


async def test_an_artifact_going_to_a_slow_store_leaves_the_loop_free(engine, tmp_path):
    slow = SlowFiles(tmp_path / "files", writes=".bin")
    files = ArtifactStore(slow)
    llm = ScriptedLLM([ToolCallRequest(id="c1", name="box_report", arguments="{}")], ["Done."])
    built = await engine(llm, files)

    events, _ = await asyncio.gather(_run(built, files, ChatMessage(type="chat", content="report")), _meanwhile(slow))

    assert slow.started.is_set() and slow.let_go_in_time, "the artifact's write held the event loop"
    result = next(e for e in events if getattr(e, "type", None) == "tool_result")
    assert result.ok and [a.name for a in result.artifacts] == ["report.txt"]
    stored, _ = files.get(result.artifacts[0].id, owner=USER.email)
    assert files.read(stored) == b"the report"


async def test_an_attached_file_read_from_a_slow_store_leaves_the_loop_free(engine, tmp_path):
    slow = SlowFiles(tmp_path / "files", reads=".json")
    files = ArtifactStore(slow)
    upload = files.put(owner=USER.email, name="notes.txt", mime="text/plain", data=b"my notes", kind="upload")
    llm = ScriptedLLM(["Read it."])
    built = await engine(llm, files)

    request = ChatMessage(type="chat", content="see attached", files=[upload.id])
    events, _ = await asyncio.gather(_run(built, files, request), _meanwhile(slow))

    assert slow.started.is_set() and slow.let_go_in_time, "reading the attachment's metadata held the event loop"
    assert getattr(events[-1], "type", None) == "message_done"
    assert "notes.txt (text/plain, 8 bytes)" in llm.sent[0][-1]["content"]
