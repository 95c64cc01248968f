"""Arguments the model must not choose.  The host fills them in before a call:
`username` is always the signed-in user, and file parameters get signed,
expiring URLs of files attached in this conversation, or are removed when
nothing is attached (a model-chosen URL would let it make the tool fetch
anything, e.g. an internal service)."""

from __future__ import annotations

import json
from typing import Any

from ..artifacts import StoredFile
from ..errors import ToolError
from ..signing import UrlSigner
from ..tools import ToolInfo
from .turn_state import TurnState

__all__ = ["FILE_LIST_PARAMS", "FILE_PARAMS", "fill_host_arguments", "parse_arguments"]

FILE_PARAMS = frozenset({"file_url", "filename", "file_path", "file"})
FILE_LIST_PARAMS = frozenset({"file_urls", "filenames", "files"})


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """The model's arguments as an object, or None and why not."""
    try:
        arguments = json.loads(raw or "{}")
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, str(exc)
    if not isinstance(arguments, dict):
        return None, "it is not a JSON object"
    return arguments, ""


def _match_file(value: Any, files: list[StoredFile]) -> StoredFile | None:
    """The attached file the model meant, by id or name; None when it named none of them."""
    if not isinstance(value, str):
        return None
    for stored in files:
        if value in (stored.id, stored.name) or value.endswith("/" + stored.name):
            return stored
    return None


def _linked_file(value: Any, files: list[StoredFile]) -> StoredFile | None:
    """The file behind a link the host made, when it is one of this conversation's files (an MCP
    App sends back the link it got in the tool's input; the link itself may have expired)."""
    if not isinstance(value, str):
        return None
    return next((f for f in files if f"/api/files/{f.id}/content?" in value), None)


def fill_host_arguments(tool: ToolInfo, arguments: dict[str, Any], turn: TurnState,
                        signer: UrlSigner | None) -> dict[str, Any]:  # fmt: skip
    """The arguments to send; raises ToolError when the tool needs a file and none is attached."""
    schema = tool.input_schema or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    arguments = dict(arguments)
    if "username" in properties:
        arguments["username"] = turn.user.email
    file_params = (FILE_PARAMS | FILE_LIST_PARAMS).intersection(properties)
    if not file_params:
        return arguments
    files = turn.files_for_tools()
    if not files or signer is None:
        for name in file_params:
            arguments.pop(name, None)
        if file_params & required:
            raise ToolError(
                f"The tool '{tool.qualified_name}' needs a file, and none is attached to this conversation; "
                "the call was not run. Ask the user to attach the file to their message."
            )
        return arguments
    owner = turn.user.email
    known = [*turn.conversation.files.values(), *files]

    def match(value: Any) -> StoredFile | None:
        return _match_file(value, files) or _linked_file(value, known)

    for name in FILE_PARAMS.intersection(properties):
        chosen = match(arguments.get(name)) or files[-1]
        arguments[name] = signer.url(chosen.id, owner)
    for name in FILE_LIST_PARAMS.intersection(properties):
        given = arguments.get(name)
        asked = given if isinstance(given, list) else []
        chosen_files = [f for f in (match(v) for v in asked) if f is not None] or files
        arguments[name] = [signer.url(f.id, owner) for f in chosen_files]
    return arguments
