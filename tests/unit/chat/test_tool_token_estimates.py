"""`auto` exposure's estimate of tool definition tokens, remembered per catalogue
version and offered set: the same number as measuring the JSON each turn, and a
new number as soon as a definition changes."""

from __future__ import annotations

import mcp_types

from switchboard.chat.gateway import ToolTokenEstimates, estimate_tokens
from switchboard.config.models import ServerConfig
from switchboard.tools import ToolRegistry


def tools(description: str, n: int = 30) -> list[mcp_types.Tool]:
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "What to look for."}}}
    return [mcp_types.Tool(name=f"tool_{i}", description=f"{description} {i}", input_schema=schema) for i in range(n)]


def test_the_remembered_estimate_equals_the_measured_one_and_follows_changes():
    reg = ToolRegistry()
    reg.rebuild([("s", ServerConfig(command="x"), tools("Find things."))])
    estimates = ToolTokenEstimates()
    every, some = reg.all(), reg.all()[::3]
    for offered in (every, some, every):
        assert estimates.tokens(reg.version, offered) == estimate_tokens([t.openai_schema() for t in offered])
    assert estimates.tokens(reg.version, []) == 0

    reg.rebuild([("s", ServerConfig(command="x"), tools("Find things, with a much longer description than before."))])
    changed = reg.all()
    assert estimates.tokens(reg.version, changed) == estimate_tokens([t.openai_schema() for t in changed])
    assert estimates.tokens(reg.version, changed) > estimate_tokens([t.openai_schema() for t in every])


def test_the_estimate_stays_right_when_old_entries_are_dropped():
    reg = ToolRegistry()
    reg.rebuild([("s", ServerConfig(command="x"), tools("Find things.", 5))])
    estimates = ToolTokenEstimates(max_entries=2)
    for n in range(1, 6):
        assert estimates.tokens(reg.version, reg.all()[:n]) == estimate_tokens(
            [t.openai_schema() for t in reg.all()[:n]]
        )
