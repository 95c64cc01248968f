"""A file parameter an MCP App sends back (the signed link it got in the tool's input) is the
same attached file, re-signed: not the conversation's latest one, and never the app's URL."""

import pytest

from switchboard.chat import ConversationState, TurnState
from switchboard.chat.calls.host_args import fill_host_arguments
from switchboard.errors import ToolError
from switchboard.files.artifacts import StoredFile
from switchboard.files.signing import UrlSigner
from switchboard.identity.users import User
from switchboard.tools import ToolInfo

TOOL = ToolInfo("viz_chart", "viz", "chart", "", {"type": "object", "properties": {"file_url": {"type": "string"}}}, {})


def _file(file_id: str, name: str) -> StoredFile:
    return StoredFile(id=file_id, name=name, mime="text/csv", size=1, owner="a@example.com", kind="upload", created=0)


def test_a_host_link_sent_back_names_its_own_file():
    signer = UrlSigner(b"k" * 32, "http://host.example")
    files = {"f1": _file("f1", "sales.csv"), "f2": _file("f2", "costs.csv")}  # costs.csv is the latest
    session = TurnState(
        user=User("a@example.com", frozenset()), conversation=ConversationState("a@example.com", files=files)
    )
    sent_back = signer.url("f1", "a@example.com", now=1)  # expired long ago: re-signed

    arguments = fill_host_arguments(TOOL, {"file_url": sent_back}, session, signer)
    assert "/api/files/f1/content" in arguments["file_url"] and arguments["file_url"] != sent_back

    with pytest.raises(ToolError, match="2 attached files could go to 'file_url'"):  # no file of these: none is guessed
        fill_host_arguments(TOOL, {"file_url": "https://evil.example/api/files/f9/content"}, session, signer)
