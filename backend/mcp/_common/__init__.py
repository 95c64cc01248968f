"""Helpers shared by the MCP servers shipped with Switchboard.

Each server adds ``backend/mcp`` to ``sys.path`` and imports this package, so
every server still runs on its own as ``python main.py`` from its folder.
"""

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
