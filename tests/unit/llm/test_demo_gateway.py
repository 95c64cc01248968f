"""The demo model when only the tool gateway is offered: it calls the tools the
user names through switchboard_call_tool and searches when asked to."""

from __future__ import annotations

import json

from switchboard.chat.calls.runner import frame_for_model
from switchboard.llm.demo import demo_reply

GATEWAY = [
    {"type": "function", "function": {"name": name, "description": "d"}}
    for name in ("switchboard_search_tools", "switchboard_describe_tool", "switchboard_call_tool")
]


def reply(text: str):
    return demo_reply([{"role": "user", "content": text}], GATEWAY)


def test_a_named_tool_is_called_through_the_gateway_with_its_arguments():
    _, calls = reply('please run time_get_current_time {"timezone": "Asia/Tokyo"}')
    assert calls == [
        (
            "switchboard_call_tool",
            json.dumps({"name": "time_get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}),
        )
    ]


def test_several_named_tools_each_get_their_own_arguments():
    _, calls = reply('git_status {"repo_path": "."} and then get_current_time {"timezone": "UTC"}')
    assert [json.loads(a) for _, a in calls] == [
        {"name": "git_status", "arguments": {"repo_path": "."}},
        {"name": "get_current_time", "arguments": {"timezone": "UTC"}},
    ]


def test_search_and_list_go_to_the_search_tool():
    assert reply("search convert a time zone")[1] == [("switchboard_search_tools", '{"query": "convert a time zone"}')]
    assert reply("list:git")[1] == [("switchboard_search_tools", '{"query": "list:git"}')]


def test_plain_words_get_the_help_which_mentions_the_gateway():
    text, calls = reply("hello there")
    assert calls == [] and "tool gateway" in text


def test_the_summary_names_the_tool_that_ran_not_the_gateway():
    messages = [
        {"role": "user", "content": "run time_get_current_time"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "function": {"name": "switchboard_call_tool", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": frame_for_model("time_get_current_time", True, "12:00", 1000),
        },
    ]
    text, _ = demo_reply(messages, GATEWAY)
    assert "`time_get_current_time` — **ok**" in text
