import pytest

from switchboard.chat.calls.approvals import approval_reason, schema_problem
from switchboard.config.models import ServerConfig
from switchboard.tools import ToolInfo


def tool(name="t", annotations=None):
    return ToolInfo(
        qualified_name=f"s_{name}",
        server="s",
        name=name,
        description="",
        input_schema={"type": "object"},
        annotations=annotations or {},
        definition_hash="h1",
    )


@pytest.mark.parametrize(
    ("annotations", "policy", "asks"),
    [
        ({}, "destructive", True),  # no annotations: may change data
        ({"readOnlyHint": True}, "destructive", False),
        ({"destructiveHint": False}, "destructive", True),  # additive writes still change data
        ({"readOnlyHint": False, "destructiveHint": False}, "destructive", True),  # git_add, git_commit
        ({"readOnlyHint": False}, "destructive", True),
        ({"readOnlyHint": True, "destructiveHint": True}, "destructive", False),  # read-only wins
        ({"readOnlyHint": True}, "always", True),
        ({}, "never", False),
    ],
)
def test_policy_and_annotations(annotations, policy, asks):
    config = ServerConfig(command="x", approval=policy)
    assert (approval_reason(tool(annotations=annotations), config, set()) is not None) is asks


def test_config_overrides_annotations_per_tool_both_ways():
    read_only = tool(annotations={"readOnlyHint": True})
    assert approval_reason(read_only, ServerConfig(command="x", require_approval=["t"]), set())
    assert approval_reason(tool(), ServerConfig(command="x", skip_approval=["t"]), set()) is None


def test_schema_problems_name_the_field():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert schema_problem(schema, {"n": 1}) is None
    assert "n" in schema_problem(schema, {"n": "one"})
    assert "required" in schema_problem(schema, {})
