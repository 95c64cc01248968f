"""Helpers shared by the MCP servers shipped with Switchboard.

Each server adds ``backend/mcp`` to ``sys.path`` and imports this package, so
every server still runs on its own as ``python main.py`` from its folder.
"""

import contextlib

# fastmcp imports these when a session first needs its state store (the first request after
# `initialize`). The host starts its stdio servers while it is still loading itself, so a
# server that loads them now answers the host's first `tools/list` sooner.
with contextlib.suppress(ImportError):
    import key_value.aio.adapters.pydantic
    import key_value.aio.stores.memory  # noqa: F401

from _common.fetch import (
    DEFAULT_MAX_BYTES,
    FILES_ORIGIN_ENV,
    FetchedFile,
    fetch_file,
    host_file_link_problem,
    local_files_allowed,
)
from _common.v2 import artifact, file_stem, v2_result

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FILES_ORIGIN_ENV",
    "FetchedFile",
    "artifact",
    "fetch_file",
    "file_stem",
    "host_file_link_problem",
    "local_files_allowed",
    "v2_result",
]
