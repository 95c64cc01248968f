"""Tool trust (quarantine): whether each tool's definition is one an administrator approved.

Every tool has a pin (trust_pin.py). Its state is `approved` (the pin is the approved one),
`pending` (never approved), `changed` (the pin is not the approved one) or `blocked`. Only an
approved tool is offered to the model, found by the gateway or called (tools/registry.py). A
server's `trust` setting says who approves a tool's first definition: `auto` (the config files'
default): the host, when it first sees it; `review`: an administrator. A changed definition always
waits for an administrator. This replaces the per-user "this tool's definition changed" prompt of
earlier versions: their pins are kept as approved `legacy:` pins (store migration 0010).

Decisions are kept in memory and, once a backend is given (the store's `tool_trust` rows), there,
shared by every app process: `decide` is the one place a decision is made, and returns it as a
`TrustDecision` (what the audit log records). `shared` tells the other processes (the relay), which
`refresh` from the store."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import mcp_types

from ..errors import Conflict
from ..trust_records import TrustDecision, TrustRecord
from .models import TrustState
from .trust_pin import legacy_hash, pin_of, tool_definition

__all__ = ["LEGACY", "Trust", "TrustBackend", "TrustState"]

log = logging.getLogger("switchboard.tools")

LEGACY = "legacy:"


class TrustBackend(Protocol):
    async def records(self, server: str | None = None) -> dict[tuple[str, str], TrustRecord]: ...

    async def record(self, server: str, tool: str) -> TrustRecord | None: ...

    async def first(self, record: TrustRecord) -> TrustRecord: ...

    async def write(self, record: TrustRecord, expected_version: int | None) -> bool: ...


class Trust:
    def __init__(
        self, on_change: Callable[[str], None] | None = None, shared: Callable[[str], None] | None = None
    ) -> None:
        self._records: dict[tuple[str, str], TrustRecord] = {}
        self._seen: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}  # the pin and definition listed now
        self._pins: dict[tuple[str, str], tuple[mcp_types.Tool, str, str, dict[str, Any]]] = {}
        self._backend: TrustBackend | None = None
        self._on_change = on_change  # (server): the registry lists its tools again, the pages hear of it
        self.shared: Callable[[str], None] = shared or (lambda server: None)  # the other app processes (the relay)
        self._reported: set[tuple[str, str, str]] = set()
        self._writes: set[asyncio.Task[None]] = set()

    async def use(self, backend: TrustBackend, legacy_file: Path | None = None) -> None:
        """Keep decisions in `backend` from now on (importing a pins file of an old version once)."""
        self._backend = backend
        if legacy_file is not None and legacy_file.is_file():
            try:
                for key, pin in json.loads(legacy_file.read_text(encoding="utf-8")).items():
                    server, _, tool = key.partition("/")
                    record = TrustRecord(server, tool, "approved", LEGACY + pin["hash"], pin.get("definition"), 1, None)
                    await backend.first(record)
                legacy_file.rename(legacy_file.with_suffix(".json.imported"))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                log.warning("could not import the tool pins in %s", legacy_file, extra={"event": "pins_import_failed"})
        self._records.update(await backend.records())

    # -- states ----------------------------------------------------------------------------------

    def pin(self, server: str, tool: mcp_types.Tool, instructions: str) -> tuple[str, dict[str, Any]]:
        """The tool's pin and pinned definition (worked out once per listed tool)."""
        key = (server, tool.name)
        cached = self._pins.get(key)
        if cached is not None and cached[0] is tool and cached[1] == instructions:
            return cached[2], cached[3]
        definition = tool_definition(tool, instructions)
        pin = pin_of(definition)
        self._pins[key] = (tool, instructions, pin, definition)
        return pin, definition

    def state(
        self, server: str, tool: str, pin: str, definition: dict[str, Any], mode: Literal["auto", "review"]
    ) -> TrustState:
        """The state of this definition of the tool; approves it when it is the first one seen of
        a `trust: auto` server's tool."""
        key = (server, tool)
        self._seen[key] = (pin, definition)
        record = self._records.get(key)
        if record is None:
            if mode == "review":
                return "pending"
            record = TrustRecord(server, tool, "approved", pin, definition, 1, None, datetime.now(UTC))
            self._records[key] = record
            self._write(self._first(record))
            return "approved"
        if record.state == "blocked":
            return "blocked"
        if record.pin == pin:
            return "approved"
        if record.pin is not None and record.pin == LEGACY + legacy_hash(definition):
            upgraded = replace(record, pin=pin, definition=definition, version=record.version + 1)
            self._records[key] = upgraded
            self._write(self._upgrade(upgraded, record.version))
            return "approved"
        if (server, tool, pin) not in self._reported:
            self._reported.add((server, tool, pin))
            log.warning(
                "tool definition changed: %s/%s waits for an administrator",
                server,
                tool,
                extra={"event": "tool_definition_changed", "tool": f"{server}/{tool}", "pin": pin},
            )
        return "changed"

    def seen(self, server: str, tool: str) -> tuple[str, dict[str, Any]] | None:
        """The pin and definition of the tool as last listed."""
        return self._seen.get((server, tool))

    def record(self, server: str, tool: str) -> TrustRecord | None:
        return self._records.get((server, tool))

    # -- decisions -------------------------------------------------------------------------------

    async def decide(
        self,
        kind: Literal["approve", "block"],
        *,
        server: str,
        tool: str,
        qualified_name: str,
        pin: str,
        by: str,
        before_state: str,
    ) -> TrustDecision:
        """An administrator's decision on the tool as listed now (`pin`: the pin they reviewed).
        Raises Conflict when the tool's definition is no longer that pin, or another decision on
        it was made meanwhile (on any process)."""
        key = (server, tool)
        seen = self._seen.get(key)
        if seen is None or seen[0] != pin:
            raise Conflict(
                f"the tool '{qualified_name}' is no longer the definition with pin {pin[:12]}...; "
                "list the tools again and review the definition it has now"
            )
        stored = await self._backend.record(server, tool) if self._backend is not None else self._records.get(key)
        now = datetime.now(UTC)
        if kind == "approve":
            record = TrustRecord(server, tool, "approved", pin, seen[1], (stored.version if stored else 0) + 1, by, now)
        else:
            record = TrustRecord(
                server,
                tool,
                "blocked",
                stored.pin if stored else None,
                stored.definition if stored else None,
                (stored.version if stored else 0) + 1,
                by,
                now,
            )
        if self._backend is not None and not await self._backend.write(record, stored.version if stored else None):
            await self.refresh(server)
            raise Conflict(
                f"another decision on the tool '{qualified_name}' was made at the same moment; "
                "list the tools again and review it as it is now"
            )
        self._records[key] = record
        self._changed(server)
        self.shared(server)
        log.info(
            "tool %s: %s by %s",
            qualified_name,
            kind,
            by,
            extra={"event": f"tool_{kind}", "tool": f"{server}/{tool}", "pin": pin, "user": by},
        )
        return TrustDecision(
            kind, server, tool, qualified_name, pin, by, now, before_state, stored.pin if stored else None
        )

    async def refresh(self, server: str) -> None:
        """Read the server's decisions again (another process decided on one of its tools)."""
        if self._backend is None:
            return
        fresh = await self._backend.records(server)
        for key in [k for k in self._records if k[0] == server and k not in fresh]:
            del self._records[key]
        self._records.update(fresh)
        self._changed(server)

    # -- writing ---------------------------------------------------------------------------------

    async def flush(self) -> None:
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    def _changed(self, server: str) -> None:
        if self._on_change is not None:
            self._on_change(server)

    def _write(self, write: Coroutine[Any, Any, None]) -> None:
        if self._backend is None:
            write.close()
            return
        task = asyncio.get_running_loop().create_task(write)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _first(self, record: TrustRecord) -> None:
        assert self._backend is not None
        try:
            stored = await self._backend.first(record)
        except Exception as exc:
            log.warning("could not store the approval of %s/%s: %s", record.server, record.tool, exc)
            return
        if (stored.state, stored.pin) != (record.state, record.pin):
            # Another process saw (and approved) another definition first: that one is approved.
            self._records[(record.server, record.tool)] = stored
            self._changed(record.server)

    async def _upgrade(self, record: TrustRecord, version: int) -> None:
        assert self._backend is not None
        try:
            if not await self._backend.write(record, version):
                await self.refresh(record.server)
        except Exception as exc:
            log.warning("could not re-pin %s/%s: %s", record.server, record.tool, exc)
