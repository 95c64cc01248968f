"""Checks beyond the files' own validity, for `switchboard check-config`: things that
would make a server fail at start-up but may be fine on the machine that runs the app
(so they are warnings, not errors)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from .loader import McpConfig

__all__ = ["PYTHON_COMMANDS", "server_warnings"]

# Commands that mean "the app's own interpreter" (what the stdio transport runs instead).
PYTHON_COMMANDS = frozenset({"python", "python3", "python3.11", "python3.12", "python3.13"})


def server_warnings(mcp: McpConfig, project_root: Path, environ: Mapping[str, str]) -> list[str]:
    """One line per problem found in the enabled stdio servers' `command` and `cwd`, and one per
    server on a deprecated transport (HTTP+SSE keeps working, but MCP 2026-07-28 dropped it)."""
    warnings = []
    for name, server in mcp.servers.items():
        if server.enabled and server.transport == "sse":
            warnings.append(f"server '{name}', field 'transport': deprecated transport: prefer streamable HTTP")
        if not server.enabled or server.transport != "stdio" or not server.command:
            continue
        cwd = Path(server.cwd) if server.cwd else project_root
        if not cwd.is_absolute():
            cwd = project_root / cwd  # a relative cwd is relative to the project root
        if not cwd.is_dir():
            warnings.append(f"server '{name}', field 'cwd': the folder {cwd} does not exist")
            continue
        command = server.command
        if command in PYTHON_COMMANDS:
            continue
        if "/" in command:  # a path: relative ones are resolved in the server's cwd, as the child sees them
            path = Path(command) if Path(command).is_absolute() else cwd / command
            if not path.is_file():
                warnings.append(f"server '{name}', field 'command': {path} does not exist")
        elif shutil.which(command, path=environ.get("PATH")) is None:
            warnings.append(
                f"server '{name}', field 'command': '{command}' is not on PATH here "
                "(install it, or check-config on the machine that runs the app)"
            )
    return warnings
