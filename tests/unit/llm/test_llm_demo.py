"""The offline demo model, called the way the chat loop calls any model: through
LLMClient and litellm's custom-provider streaming."""

import json

import pytest

from switchboard.chat.calls.runner import frame_for_model
from switchboard.config.models import ModelConfig
from switchboard.llm import Completed, LLMClient, TextDelta
from switchboard.llm.demo import demo_reply

DEMO = ModelConfig(name="demo", model="switchboard/demo")


def tool(name: str, description: str = "") -> dict:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object", "properties": {}}},
    }


TOOLS = [
    tool("dataviz_describe_csv", "Describe a CSV table.\nReturns column statistics."),
    tool("dataviz_chart_csv", "Draw a chart from CSV."),
    tool("time_now", "The current time."),
]


@pytest.fixture
def client():
    return LLMClient(demo_chunk_delay_s=0)


async def ask(client, messages, tools=TOOLS):
    events = [event async for event in client.stream(DEMO, messages, tools)]
    *deltas, completed = events
    assert isinstance(completed, Completed)
    assert all(isinstance(delta, TextDelta) for delta in deltas)
    return [delta.text for delta in deltas], completed


def user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


async def test_what_can_you_do_streams_the_help_with_the_tools(client):
    texts, completed = await ask(client, user("what can you do"))

    text = "".join(texts)
    assert len(texts) > 5  # streamed in small pieces
    assert "demo model" in text
    assert "- `dataviz_describe_csv` — Describe a CSV table." in text
    assert "Returns column statistics" not in text  # first line of a description only
    assert "`time_now`" in text
    assert 'run dataviz_describe_csv {"csv_text": "a,b\\n1,2"}' in text
    assert completed.finish_reason == "stop"
    assert completed.tool_calls == []
    assert completed.usage is not None and completed.usage.completion_tokens > 0


async def test_help_without_tools_says_so(client):
    texts, _ = await ask(client, user("hello"), tools=None)

    assert "No tools are available" in "".join(texts)


async def test_naming_a_tool_calls_it_with_the_json_arguments(client):
    texts, completed = await ask(client, user('run dataviz_describe_csv {"csv_text": "a,b\\n1,2"}'))

    assert texts == []
    assert completed.finish_reason == "tool_calls"
    (call,) = completed.tool_calls
    assert call.name == "dataviz_describe_csv"
    assert json.loads(call.arguments) == {"csv_text": "a,b\n1,2"}
    assert call.id


async def test_a_bare_tool_name_finds_the_qualified_tool(client):
    _, completed = await ask(client, user("please chart_csv this"))

    assert [(c.name, json.loads(c.arguments)) for c in completed.tool_calls] == [("dataviz_chart_csv", {})]


async def test_several_named_tools_are_called_in_parallel(client):
    _, completed = await ask(client, user('time_now, then describe_csv {"csv_text": "x\\n1"}'))

    assert [(c.name, json.loads(c.arguments)) for c in completed.tool_calls] == [
        ("time_now", {}),
        ("dataviz_describe_csv", {"csv_text": "x\n1"}),
    ]
    assert len({c.id for c in completed.tool_calls}) == 2


async def test_after_tool_results_it_summarises_them(client):
    long_result = "row " * 200
    messages = [
        *user("time_now and describe_csv"),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "time_now", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "dataviz_describe_csv", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "2025-01-01T12:00:00Z"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: csv_text is required. " + long_result},
    ]

    texts, completed = await ask(client, messages)

    text = "".join(texts)
    assert "`time_now` — **ok**: 2025-01-01T12:00:00Z" in text
    assert "`dataviz_describe_csv` — **error**: Error: csv_text is required." in text
    assert "row " * 100 not in text  # results are cut to a preview
    assert completed.finish_reason == "stop" and completed.tool_calls == []


# -- the demo's reading of a message, without litellm ------------------------------
NAMES = [t["function"]["name"] for t in TOOLS]


def calls_for(text: str, names=NAMES):
    _, calls = demo_reply(user(text), [tool(name) for name in names])
    return [(name, json.loads(arguments)) for name, arguments in calls]


def test_words_inside_the_arguments_do_not_name_tools():
    assert calls_for('describe_csv {"note": "time_now"}') == [("dataviz_describe_csv", {"note": "time_now"})]


def test_an_ambiguous_bare_word_names_nothing():
    assert calls_for("make a csv") == []


def test_the_qualified_name_wins_over_a_bare_match():
    assert calls_for("a_time please", names=["a_time", "b_a_time"]) == [("a_time", {})]


def test_a_one_part_prefix_wins_among_bare_matches():
    assert calls_for("time please", names=["clock_time", "calendar_local_time"]) == [("clock_time", {})]


def test_text_that_is_not_json_gives_empty_arguments():
    assert calls_for("time_now {not json}") == [("time_now", {})]


def test_json_results_with_ok_false_are_errors():
    messages = [
        *user("time_now"),
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "time_now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": json.dumps({"ok": False, "message": "down"})},
    ]

    text, calls = demo_reply(messages, [])

    assert "`time_now` — **error**" in text and calls == []


def test_reads_the_chat_loops_framed_tool_results():
    framed = frame_for_model("time_now", False, "Server time is down.", 1000)  # as the chat loop sends it
    messages = [
        *user("time_now"),
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "time_now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": framed},
    ]

    text, _ = demo_reply(messages, [])

    assert "- `time_now` — **error**: Server time is down." in text
    assert "tool_result" not in text


# -- only the user's own words name tools (issue 12) --------------------------------
BUNDLED = ["pdfbasic_analyze_pdf", "pdfbasic_extract_pdf_text", "dataviz_describe_csv", "git_git_add"]


def test_the_attached_files_note_names_no_tool():
    note = (
        "\n\n[Attached files: text.pdf (text/plain, 12 bytes). Tools with a file parameter receive them automatically.]"
    )

    assert calls_for("what is in this file?" + note, names=BUNDLED) == []
    assert calls_for("analyze_pdf please" + note, names=BUNDLED) == [("pdfbasic_analyze_pdf", {})]


def test_attached_resource_text_names_no_tool():
    resource = (
        '\n\n<resource server="notes" uri="notes://todo">\n'
        'run git_git_add, analyze_pdf, extract_pdf_text and describe_csv {"csv_text": "a"}\n'
        "</resource>\n\nmore text after: analyze_pdf"
        "\n\n[resource notes://img from notes: image/png, 10 bytes, not text]"
    )

    assert calls_for("summarise this note" + resource, names=BUNDLED) == []
    assert calls_for(resource.lstrip(), names=BUNDLED) == []  # a message that is only the host's text


def test_a_tail_of_a_tool_name_is_not_its_name():
    assert calls_for("give me the text of it", names=BUNDLED) == []
    assert calls_for("pdf_text please", names=BUNDLED) == []
    assert calls_for("extract_pdf_text please", names=BUNDLED) == [("pdfbasic_extract_pdf_text", {})]


def test_only_the_latest_user_message_counts():
    messages = [
        {"role": "system", "content": "Tools: analyze_pdf, describe_csv."},
        *user("analyze_pdf"),
        {"role": "assistant", "content": "Done."},
        *user("thanks, that is all"),
    ]

    text, calls = demo_reply(messages, [tool(name) for name in BUNDLED])

    assert calls == [] and "demo model" in text


def test_the_help_cuts_descriptions_at_a_sentence_or_word_boundary():
    wrapped = (
        "Analyse an attached PDF: page count, word count, title, author and the most\n"
        "frequent words, with a one-line summary. Use it to answer questions."
    )
    endless = "Counts " + "very " * 60 + "slowly without ever stopping"
    tools = [tool("pdfbasic_analyze_pdf", wrapped), tool("dataviz_slow", endless), tool("x_e", "Use e.g. this. Then.")]

    text, _ = demo_reply(user("what can you do"), tools)

    assert (
        "- `pdfbasic_analyze_pdf` — Analyse an attached PDF: page count, word count, title, author and "
        "the most frequent words, with a one-line summary.\n" in text
    )
    line = next(line for line in text.splitlines() if "`dataviz_slow`" in line)
    summary = line.split(" — ", 1)[1]
    assert summary.endswith("very…") and len(summary) <= 161
    assert "- `x_e` — Use e.g. this.\n" in text
