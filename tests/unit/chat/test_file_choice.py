"""Which attached file a tool's file parameter gets, through the turn engine: a scripted model, the
real file store and signer, and in-memory FastMCP servers that take CSV (`viz`) or PDF (`pdf`).
The tools answer with the link they got; the file id in it says which file that was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastmcp import FastMCP

from switchboard.chat import CallRunner, CallSettings, ChatEngine, Conversations, ConversationState, TurnState
from switchboard.chat.events import ChatMessage
from switchboard.config.loader import AppConfig, McpConfig
from switchboard.config.models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig
from switchboard.files.artifacts import ArtifactStore, StoredFile
from switchboard.files.signing import UrlSigner
from switchboard.identity.users import User
from switchboard.llm import ModelCatalogue
from switchboard.llm.types import ToolCallRequest
from switchboard.tools import ServerPool
from tests.support.scripted_llm import ScriptedLLM

USER = User("ann@example.com", frozenset())
CSV = b"month,sales,costs\nJan,3,1\nFeb,5,2\n"
PDF = b"%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n"

viz = FastMCP("viz")
pdf = FastMCP("pdf")


@viz.tool(annotations={"readOnlyHint": True})
def chart_csv(x: str, y: list[str] | None = None, file_url: str | None = None, csv_text: str | None = None) -> str:
    return f"chart of {file_url or csv_text}"


@viz.tool(annotations={"readOnlyHint": True})
def merge(file_urls: list[str] | None = None) -> str:
    return "merged " + " ".join(file_urls or [])


@pdf.tool(annotations={"readOnlyHint": True})
def analyze_pdf(file_url: str) -> str:
    return f"read {file_url}"


def call(name: str, arguments: dict[str, object]) -> ToolCallRequest:
    return ToolCallRequest(id="c", name=name, arguments=json.dumps(arguments))


@pytest.fixture
async def site(tmp_path: Path):
    pools: list[ServerPool] = []
    files = ArtifactStore(tmp_path / "files")

    async def build(llm: ScriptedLLM):
        servers = {
            "viz": ServerConfig(
                url="http://in-memory.invalid/mcp", approval="never", file_types=["text/csv", ".csv", ".tsv"]
            ),
            "pdf": ServerConfig(url="http://in-memory.invalid/mcp", approval="never", file_types=["application/pdf"]),
        }
        config = AppConfig(
            mcp=McpConfig(servers=servers),
            llm=LLMConfig(default_model="m", models=[ModelConfig(name="m", model="openai/m")]),
            groups=GroupsConfig(),
            compliance=ComplianceLevels(),
            system_prompt="",
        )
        pool = ServerPool(config.mcp, project_root=tmp_path, log_dir=tmp_path, in_memory={"viz": viz, "pdf": pdf})
        pools.append(pool)
        pool.start()
        await pool.wait_settled(10)
        calls = CallRunner(
            pool,
            files,
            config.compliance,
            CallSettings(approval_timeout_s=2),
            signer=UrlSigner(b"k" * 32, "http://host.example"),
        )
        engine = ChatEngine(
            llm=llm, models=ModelCatalogue(config.llm, {}), pool=pool, calls=calls, files=files, config=config
        )
        return engine, Conversations(None, files)  # type: ignore[arg-type]  # nothing stored

    yield build, files
    for pool in pools:
        await pool.stop()


def upload(files: ArtifactStore, name: str, data: bytes, mime: str) -> StoredFile:
    return files.put_upload(owner=USER.email, name=name, mime=mime, data=data, max_bytes=10**6, max_files=100)


async def turn(engine, conversations, conversation: ConversationState, *attached: StoredFile, content: str = "go"):
    request = ChatMessage(type="chat", content=content, files=[f.id for f in attached])
    events = [
        e
        async for e in engine.run_turn(TurnState(user=USER, conversation=conversation), request, conversations.recorder)
    ]
    return next((e for e in events if e.type == "tool_result"), None), events


def got(result) -> str:
    """Which file the tool got: the id in its link."""
    assert result.ok, result.content
    return result.content.split("/api/files/")[1].split("/content")[0]


async def test_of_a_csv_and_a_pdf_the_csv_tool_gets_the_csv(site):
    build, files = site
    sales, report = upload(files, "sales.csv", CSV, "text/csv"), upload(files, "report.pdf", PDF, "application/pdf")
    llm = ScriptedLLM([call("viz_chart_csv", {"x": "month", "y": ["sales", "costs"]})], ["done"])
    engine, conversations = await build(llm)

    result, _ = await turn(engine, conversations, ConversationState(owner=USER.email, incognito=True), sales, report)

    assert got(result) == sales.id


async def test_a_file_the_model_names_is_that_file_in_any_later_turn(site):
    build, files = site
    sales, report = upload(files, "sales.csv", CSV, "text/csv"), upload(files, "report.pdf", PDF, "application/pdf")
    llm = ScriptedLLM(
        ["attached"],
        [call("viz_chart_csv", {"x": "month", "file_url": "sales.csv"})],
        ["done"],
        [call("viz_chart_csv", {"x": "month", "file_url": sales.id})],
        ["done"],
        [call("pdf_analyze_pdf", {"file_url": "report.pdf"})],
        ["done"],
        [call("viz_chart_csv", {"x": "month", "file_url": "/home/ann/report.pdf"})],
        ["done"],
    )
    engine, conversations = await build(llm)
    conversation = ConversationState(owner=USER.email, incognito=True)
    await turn(engine, conversations, conversation, sales, report, content="here are two files")

    assert got((await turn(engine, conversations, conversation))[0]) == sales.id  # by name
    assert got((await turn(engine, conversations, conversation))[0]) == sales.id  # by id
    assert got((await turn(engine, conversations, conversation))[0]) == report.id
    assert got((await turn(engine, conversations, conversation))[0]) == report.id  # named, so sent even to viz


async def test_an_earlier_turns_file_of_the_right_type_when_this_messages_files_do_not_fit(site):
    build, files = site
    sales, report = upload(files, "sales.csv", CSV, "text/csv"), upload(files, "report.pdf", PDF, "application/pdf")
    llm = ScriptedLLM(["attached"], [call("viz_chart_csv", {"x": "month"})], ["done"])
    engine, conversations = await build(llm)
    conversation = ConversationState(owner=USER.email, incognito=True)
    await turn(engine, conversations, conversation, sales)

    result, _ = await turn(engine, conversations, conversation, report)

    assert got(result) == sales.id


async def test_two_files_that_fit_are_not_guessed_between(site):
    build, files = site
    north, south = upload(files, "north.csv", CSV, "text/csv"), upload(files, "south.csv", CSV, "text/csv")
    llm = ScriptedLLM(
        [call("viz_chart_csv", {"x": "month"})],
        ["done"],
        [call("viz_chart_csv", {"x": "month", "file_url": "http://169.254.169.254/x"})],
        ["done"],
    )
    engine, conversations = await build(llm)
    conversation = ConversationState(owner=USER.email, incognito=True)

    for _ in range(2):
        result, events = await turn(engine, conversations, conversation, north, south)
        assert not result.ok and not any(e.type == "tool_start" for e in events)
        assert "2 attached files could go to 'file_url'" in result.content
        assert f"north.csv (text/csv, id {north.id})" in result.content and "south.csv" in result.content
        assert 'Name the file to use in \'file_url\' by its name or id (e.g. "file_url": "north.csv")' in result.content


async def test_when_no_attached_file_fits_the_call_says_which_files_there_are(site):
    build, files = site
    sales, report = upload(files, "sales.csv", CSV, "text/csv"), upload(files, "report.pdf", PDF, "application/pdf")
    llm = ScriptedLLM(
        [call("pdf_analyze_pdf", {})],
        ["done"],
        [call("viz_chart_csv", {"x": "month", "file_url": "q3.csv"})],
        ["done"],
        [call("viz_chart_csv", {"x": "month", "csv_text": "a,b\n1,2\n"})],
        ["done"],
    )
    engine, conversations = await build(llm)

    result, _ = await turn(engine, conversations, ConversationState(owner=USER.email, incognito=True), sales)
    assert (
        not result.ok and "no attached file is of a type this tool's server takes (application/pdf)" in result.content
    )
    assert "sales.csv (text/csv" in result.content

    result, _ = await turn(engine, conversations, ConversationState(owner=USER.email, incognito=True), report)
    assert not result.ok and "(text/csv, .csv, .tsv)" in result.content and "report.pdf" in result.content

    # left out and not required: the tool runs without a file
    result, events = await turn(engine, conversations, ConversationState(owner=USER.email, incognito=True), report)
    assert result.ok and result.content == "chart of a,b\n1,2\n"
    assert "file_url" not in next(e for e in events if e.type == "tool_start").arguments


async def test_a_list_parameter_gets_the_files_named_else_every_file_that_fits(site):
    build, files = site
    north, south = upload(files, "north.csv", CSV, "text/csv"), upload(files, "south.csv", CSV, "text/csv")
    report = upload(files, "report.pdf", PDF, "application/pdf")
    llm = ScriptedLLM(
        [call("viz_merge", {})],
        ["done"],
        [call("viz_merge", {"file_urls": ["south.csv"]})],
        ["done"],
        [call("viz_merge", {"file_urls": ["south.csv", "nope.csv"]})],
        ["done"],
        [call("viz_merge", {"file_urls": "north.csv"})],
        ["done"],
    )
    engine, conversations = await build(llm)
    conversation = ConversationState(owner=USER.email, incognito=True)

    result, _ = await turn(engine, conversations, conversation, north, report, south)
    assert result.ok and north.id in result.content and south.id in result.content and report.id not in result.content
    result, _ = await turn(engine, conversations, conversation)
    assert result.ok and south.id in result.content and north.id not in result.content
    result, _ = await turn(engine, conversations, conversation)
    assert not result.ok and "'nope.csv' names no attached file" in result.content
    result, _ = await turn(engine, conversations, conversation)  # one name, not in a list
    assert result.ok and north.id in result.content and south.id not in result.content


async def test_a_name_two_files_share_is_not_guessed_between_unless_one_is_in_this_message(site):
    build, files = site
    old, new = upload(files, "data.csv", CSV, "text/csv"), upload(files, "data.csv", CSV, "text/csv")
    llm = ScriptedLLM(
        ["attached"],
        [call("viz_chart_csv", {"x": "month", "file_url": "data.csv"})],
        ["done"],
        [call("viz_chart_csv", {"x": "month", "file_url": "data.csv"})],
        ["done"],
    )
    engine, conversations = await build(llm)
    conversation = ConversationState(owner=USER.email, incognito=True)
    await turn(engine, conversations, conversation, old)

    assert got((await turn(engine, conversations, conversation, new))[0]) == new.id
    result, _ = await turn(engine, conversations, conversation)
    assert not result.ok and "'data.csv' names 2 attached files" in result.content
    assert f'(e.g. "file_url": "{old.id}")' in result.content
