"""Arguments the model must not choose.  The host fills them in before a call:
`username` is always the signed-in user, and file parameters get signed,
expiring URLs of files attached in this conversation (which one: chat/calls/file_choice.py),
or are removed when nothing is attached (a model-chosen URL would let it make the tool fetch
anything, e.g. an internal service)."""

from __future__ import annotations

import json
from typing import Any

from ...config.models import ServerConfig
from ...errors import ToolError
from ...files.signing import UrlSigner
from ...tools import ToolInfo
from ..turn_state import TurnState
from .file_choice import FileChooser

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


def fill_host_arguments(
    tool: ToolInfo,
    arguments: dict[str, Any],
    turn: TurnState,
    signer: UrlSigner | None,
    server: ServerConfig | None = None,
) -> dict[str, Any]:
    """The arguments to send; raises ToolError when the tool needs a file and none is attached, or
    when which attached file it should get is not clear (chat/calls/file_choice.py). `server`: the tool's
    server's config (its `file_types`)."""
    schema = tool.input_schema or {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    arguments = dict(arguments)
    if "username" in properties:
        arguments["username"] = turn.user.email
    file_params = (FILE_PARAMS | FILE_LIST_PARAMS).intersection(properties)
    if not file_params:
        return arguments
    if (not turn.conversation.files and not turn.progress.turn_files) or signer is None:
        for name in file_params:
            arguments.pop(name, None)
        if file_params & required:
            raise ToolError(
                f"The tool '{tool.qualified_name}' needs a file, and none is attached to this conversation; "
                "the call was not run. Ask the user to attach the file to their message."
            )
        return arguments
    owner = turn.user.email
    chooser = FileChooser(
        tool=tool.qualified_name,
        turn_files=turn.progress.turn_files,
        known=list({f.id: f for f in (*turn.conversation.files.values(), *turn.progress.turn_files)}.values()),
        server=server,
    )
    for name in FILE_PARAMS.intersection(properties):
        given = arguments.get(name)
        chosen = chooser.one(name, given, asked=name in required or given not in (None, ""))
        if chosen is None:
            arguments.pop(name, None)
        else:
            arguments[name] = signer.url(chosen.id, owner)
    for name in FILE_LIST_PARAMS.intersection(properties):
        given = arguments.get(name)
        chosen_files = chooser.several(name, given, asked=name in required or bool(given))
        if chosen_files:
            arguments[name] = [signer.url(f.id, owner) for f in chosen_files]
        else:
            arguments.pop(name, None)
    return arguments
