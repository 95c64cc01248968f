"""A page that keeps the renders it drew (`/ws?html=rest`) gets a long answer's `message_done`
with only the HTML after their finished blocks; every other client still gets the whole answer.
Real sockets (the app served by uvicorn), the HTTP LLM double, a real stdio MCP server."""

from __future__ import annotations

import pytest

from tests.support.doors import WebsocketDoor, served
from tests.support.harness import make_settings, write_toolbox_site
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def long_answer(sections: int = 40) -> str:
    return "".join(
        f"## Part {i} ✨\n\nA paragraph about part {i}, with **bold** text and `code` 😀.\n\n"
        f"```python\nprint({i})\n```\n\n| a | b |\n|---|--:|\n| {i} | {i * 2} |\n\n"
        for i in range(sections)
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory, llm):
    tmp = tmp_path_factory.mktemp("rest")
    write_toolbox_site(tmp, llm)
    with served(make_settings(tmp, llm_max_attempts=1)) as (base, _services):
        yield base


def turn(site, llm, path, *replies, content="write it"):
    llm.reset()
    llm.chunk_delay_s = 0.001  # a model's pace: several renders
    llm.enqueue(*replies)
    door = WebsocketDoor(site, path)
    try:
        return list(door.chat({"content": content}, False))
    finally:
        door.close()


def settled_of(events):
    return "".join(e["settled"] for e in events if e["type"] == "render")


def test_a_page_that_drew_the_renders_gets_only_the_rest_of_the_answer(site, llm):
    text = long_answer()
    whole = turn(site, llm, "/ws", TextReply(text, chunks=len(text) // 16))
    rest = turn(site, llm, "/ws?html=rest", TextReply(text, chunks=len(text) // 16))

    done, done_rest = whole[-1], rest[-1]
    assert done["type"] == done_rest["type"] == "message_done"
    # every other client: the whole answer, which begins with the renders' finished blocks
    assert done["settled_chars"] > 0 and done["html"].startswith(settled_of(whole))
    assert done["settled_chars"] == len(settled_of(whole))
    # the page: what follows them, and no `html`; together the same answer as the whole
    assert "html" not in done_rest
    assert settled_of(rest) + done_rest["html_rest"] == done["html"]
    assert done_rest["settled_chars"] == len(settled_of(rest))
    assert len(done_rest["html_rest"]) < len(done["html"]) / 10
    assert {
        k: v for k, v in done_rest.items() if k not in ("html_rest", "message_id", "user_message_id", "conversation_id")
    } == {k: v for k, v in done.items() if k not in ("html", "message_id", "user_message_id", "conversation_id")}


def test_an_answer_across_tool_rounds_is_sent_whole(site, llm):
    text = long_answer(10)
    events = turn(
        site,
        llm,
        "/ws?html=rest",
        ToolCallReply([ToolCall("toolbox_echo", '{"text": "ping"}')], text=text),
        TextReply("And after the tool, " + text, chunks=200),
    )
    done = events[-1]
    assert done["type"] == "message_done" and "html_rest" not in done and "settled_chars" not in done
    assert "After the tool" not in done["html"] and "And after the tool" in done["html"]
    assert done["html"].count("Part 9") == 2


def test_a_short_answer_is_sent_whole(site, llm):
    done = turn(site, llm, "/ws?html=rest", TextReply("Hello there, **friend**."))[-1]
    assert done["html"] == "<p>Hello there, <strong>friend</strong>.</p>\n" and "html_rest" not in done


def test_any_other_html_value_gets_the_whole_answer(site, llm):
    text = long_answer(20)
    done = turn(site, llm, "/ws?html=whole", TextReply(text, chunks=len(text) // 16))[-1]
    assert "html_rest" not in done and "Part 19" in done["html"]
