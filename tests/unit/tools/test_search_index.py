"""The gateway's search index: ranking, summaries, filtering by the caller's
usable tools, and a rebuild when the registry changes."""

from __future__ import annotations

import mcp_types

from switchboard.config.models import ServerConfig
from switchboard.tools import ToolRegistry
from switchboard.tools.search import summary_of


def tool(name: str, description: str, **properties: str) -> mcp_types.Tool:
    schema = {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in properties.items()}}
    return mcp_types.Tool(name=name, description=description, input_schema=schema)


GIT = [
    tool("git_status", "Shows the working tree status.", repo_path="Path to the repository."),
    tool("git_log", "Shows the commit logs.", max_count="Maximum number of commits to show."),
    tool(
        "git_create_branch", "Creates a new branch from an optional base branch.", branch_name="Name of the new branch."
    ),
]
TIME = [
    tool(
        "get_current_time",
        "Get current time in a specific timezones.",
        timezone="IANA timezone name, e.g. Europe/Paris.",
    ),
    tool("convert_time", "Convert time between timezones.", source_timezone="Source IANA timezone name."),
]


def registry(*servers: tuple[str, list[mcp_types.Tool]]) -> ToolRegistry:
    reg = ToolRegistry()
    reg.rebuild((name, ServerConfig(command="x"), tools) for name, tools in servers)
    return reg


def names(hits) -> list[str]:
    return [h.name for h in hits]


def test_ranks_by_name_description_and_parameters():
    reg = registry(("git", GIT), ("time", TIME))
    everyone = {t.qualified_name for t in reg.all()}

    assert names(reg.index.search("the current time in Tokyo", everyone))[0] == "time_get_current_time"
    assert names(reg.index.search("make a new branch", everyone))[0] == "git_git_create_branch"
    assert names(reg.index.search("recent commits", everyone))[0] == "git_git_log"
    # parameter descriptions count too: only convert_time's parameter says "source"
    assert names(reg.index.search("source zone", everyone))[0] == "time_convert_time"
    assert reg.index.search("banana smoothie", everyone) == []


def test_only_the_callers_tools_are_found_and_limit_and_server_apply():
    reg = registry(("git", GIT), ("time", TIME))
    only_time = {"time_get_current_time", "time_convert_time"}

    assert set(names(reg.index.search("git branch status time", only_time))) <= only_time
    assert reg.index.search("branch", only_time) == []
    assert len(reg.index.search("shows time", {t.qualified_name for t in reg.all()}, limit=1)) == 1
    assert set(names(reg.index.search("shows time", {t.qualified_name for t in reg.all()}, server="git"))) == {
        "git_git_status",
        "git_git_log",
    }


def test_summaries_are_the_first_sentence_and_short():
    assert summary_of("Shows the status.\nMore text here. And more.") == "Shows the status."
    long = summary_of("word " * 100)
    assert len(long) <= 160 and long.endswith("…")


def test_the_index_follows_a_rebuild():
    reg = registry(("git", GIT))
    first = reg.index
    assert reg.index is first  # built once, not per query
    reg.rebuild([("git", ServerConfig(command="x"), [*GIT, tool("git_diff", "Shows differences between commits.")])])

    assert reg.index is not first
    assert names(reg.index.search("differences", {t.qualified_name for t in reg.all()})) == ["git_git_diff"]


def test_a_query_over_a_thousand_tools_finds_the_one_it_names():
    """Correctness only: the search's speed is a benchmark's figure, not a timed test."""
    verbs = ["search", "get", "create", "update", "delete", "list", "export", "archive", "assign", "summarize"]
    tools = [
        tool(f"{verb}_thing{n}", f"{verb.title()} a thing number {n} and its records.", thing_id="The thing's id.")
        for n in range(100)
        for verb in verbs
    ]
    reg = registry(("big", tools))
    everyone = {t.qualified_name for t in reg.all()}
    hits = reg.index.search("export thing 42 records", everyone)
    assert hits[0].name == "big_export_thing42"


def test_related_words_prefixes_and_item_names_in_requests():
    files = [
        tool(
            "delete_directory",
            "Delete a directory and everything in it, recursively, after checking permissions.",
            path="Path.",
        ),
        tool("read_file", "Read the complete contents of a file as text, in any of the usual encodings.", path="Path."),
        tool("get_configuration", "Get the whole configuration of this account, with the defaults filled in."),
    ]
    other = [
        tool("delete_note", "Delete a note."),
        tool("create_note", "Create a note."),
        tool("get_status", "Get the status."),
    ]
    reg = ToolRegistry()
    reg.rebuild(
        [
            ("fs", ServerConfig(command="x", description="Files on disk"), files),
            ("notes", ServerConfig(command="x"), other),
        ]
    )
    everyone = {t.qualified_name for t in reg.all()}

    # "folder" is a related word of "directory" (the thesaurus), whatever the server calls it
    assert names(reg.index.search("remove the folder Old Stuff", everyone))[0] == "fs_delete_directory"
    # "notes" in "notes.txt" names the file, not the tool: what is asked is to read a file
    assert names(reg.index.search("open notes.txt", everyone))[0] == "fs_read_file"
    # four letters or more match as a prefix: "config" finds "configuration"
    assert names(reg.index.search("show the config", everyone))[0] == "fs_get_configuration"
    # a number the catalogue does not use says which item, and matches no tool on its own
    assert reg.index.search("5521", everyone) == []


def test_a_time_of_day_and_shell_commands_say_what_is_meant():
    reg = registry(
        ("time", TIME),
        ("git", GIT),
        ("fs", [tool("create_directory", "Create a directory.", path="Path."), tool("create_note", "Create a note.")]),
    )
    everyone = {t.qualified_name for t in reg.all()}

    assert names(reg.index.search("9am in Oslo", everyone))[0] in {"time_get_current_time", "time_convert_time"}
    assert names(reg.index.search("14:30 for Lima", everyone))[0] in {"time_get_current_time", "time_convert_time"}
    assert names(reg.index.search("mkdir reports", everyone))[0] == "fs_create_directory"
