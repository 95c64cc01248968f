"""Helpers shared by the MCP servers shipped with Switchboard.

Each server adds ``backend/mcp`` to ``sys.path`` and imports this package, so
every server still runs on its own as ``python main.py`` from its folder.
"""

from _common.fetch import DEFAULT_MAX_BYTES, FetchedFile, fetch_file, local_files_allowed
from _common.v2 import artifact, file_stem, v2_result

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FetchedFile",
    "artifact",
    "fetch_file",
    "file_stem",
    "local_files_allowed",
    "v2_result",
]
