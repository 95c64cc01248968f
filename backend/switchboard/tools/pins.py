"""App pinning: the first `ui://` resource (an MCP App) seen of each app tool is recorded; a
later, different one is reported as changed, so the host asks a person again before it runs.
(Tools' own definitions are pinned and reviewed by administrators: tools/trust.py.)

Pins live in memory and, once a durable backend is given (the conversation
store), there: the first writer wins across every app process sharing it, so
one process can never erase or overwrite another's pins."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["PinBackend", "ToolPins", "app_pin_name"]

log = logging.getLogger("switchboard.tools")


class PinBackend(Protocol):
    async def pins(self) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]: ...

    async def pin_if_absent(self, server: str, tool: str, digest: str, definition: dict[str, Any]) -> str: ...

    async def replace_pin(self, server: str, tool: str, digest: str, definition: dict[str, Any]) -> None: ...


def app_pin_name(tool: str) -> str:
    return f"{tool}#ui"  # never a tool's name: MCP tool names have no '#'


def _app_digest(uri: str, content_digest: str) -> str:
    return hashlib.sha256(f"{uri}\n{content_digest}".encode()).hexdigest()


class ToolPins:
    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._pins: dict[tuple[str, str], tuple[str, dict[str, Any] | None]] = {}
        self._backend: PinBackend | None = None
        self._on_change = on_change
        self._reported: set[tuple[str, str, str]] = set()
        self._writes: set[asyncio.Task[None]] = set()

    async def use(self, backend: PinBackend) -> None:
        """Keep pins in `backend` from now on: load what it has before servers are listed."""
        self._backend = backend
        for key, (digest, definition) in (await backend.pins()).items():
            self._pins[key] = (digest, definition)

    def check_app(self, server: str, tool: str, uri: str, digest: str) -> bool:
        """Whether the app (`ui://` resource) of this tool changed since the host first saw it;
        pins it when seen for the first time. Kept beside the tool's own pin, under `TOOL#ui`."""
        key = (server, app_pin_name(tool))
        pinned = self._pins.get(key)
        digest = _app_digest(uri, digest)
        if pinned is None:
            definition = {"resource": uri, "sha256": digest}
            self._pins[key] = (digest, definition)
            self._write(self._pin_if_absent(key, digest, definition))
            return False
        if pinned[0] == digest:
            return False
        if (server, key[1], digest) not in self._reported:
            self._reported.add((server, key[1], digest))
            log.warning(
                "app resource changed: %s/%s",
                server,
                tool,
                extra={"event": "app_resource_changed", "tool": f"{server}/{tool}", "uri": uri},
            )
        return True

    def accept_app(self, server: str, tool: str, uri: str, digest: str) -> None:
        digest = _app_digest(uri, digest)
        definition = {"resource": uri, "sha256": digest}
        self._pins[(server, app_pin_name(tool))] = (digest, definition)
        if self._backend is not None:
            self._write(self._backend.replace_pin(server, app_pin_name(tool), digest, definition))

    async def flush(self) -> None:
        """Wait for pins still being written."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    def _write(self, write: Any) -> None:
        if self._backend is None:
            write.close()
            return
        task = asyncio.get_running_loop().create_task(write)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _pin_if_absent(self, key: tuple[str, str], digest: str, definition: dict[str, Any]) -> None:
        assert self._backend is not None
        try:
            stored = await self._backend.pin_if_absent(key[0], key[1], digest, definition)
        except Exception as exc:
            log.warning("could not store the pin of %s/%s: %s", *key, exc, extra={"event": "pin_write_failed"})
            return
        if stored != digest:
            # Another process pinned a different definition first: that one is trusted.
            self._pins[key] = (stored, None)
            if self._on_change is not None:
                self._on_change()
