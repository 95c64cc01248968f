"""Small value types of the tools layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from cachetools import LRUCache

__all__ = ["CallSink", "RawArtifact", "ServerStatus", "ToolInfo", "ToolOutcome", "TrustState"]

TrustState = Literal["approved", "pending", "changed", "blocked"]  # tools/trust.py


@dataclass(frozen=True, slots=True)
class ToolInfo:
    qualified_name: str
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    title: str | None = None
    definition_hash: str = ""  # the tool's pin (tools/trust_pin.py)
    trust: TrustState = "approved"  # approved | pending | changed | blocked (tools/trust.py)
    app_uri: str | None = None  # MCP Apps: the `ui://` resource the tool's results are shown in
    visibility: tuple[str, ...] = ("model", "app")  # who may call it: the model, the server's own apps

    @property
    def approved(self) -> bool:
        return self.trust == "approved"

    @property
    def model_visible(self) -> bool:
        """Whether the model is offered the tool (app-only tools are for their server's apps)."""
        return "model" in self.visibility

    @property
    def read_only(self) -> bool:
        return bool(self.annotations.get("readOnlyHint"))

    @property
    def destructive(self) -> bool:
        """Whether the `destructive` approval policy asks before this tool runs: every
        tool that does not say `readOnlyHint: true`. `destructiveHint: false` only means
        the tool adds rather than deletes (git_add, writing a file); it still changes
        data, so it asks too."""
        return not self.read_only

    def openai_schema(self) -> dict[str, Any]:
        """The tool's definition as a model request carries it. One dict per definition (name
        and `definition_hash`), shared: the model client keeps its JSON (callers never change it)."""
        key = (self.qualified_name, self.definition_hash)
        found = _SCHEMAS.get(key) if self.definition_hash else None
        if found is not None:
            return found
        parameters = dict(self.input_schema or {})
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        schema = {
            "type": "function",
            "function": {"name": self.qualified_name, "description": self.description[:1024], "parameters": parameters},
        }
        if self.definition_hash:
            _SCHEMAS[key] = schema
        return schema


_SCHEMAS: LRUCache[tuple[str, str], dict[str, Any]] = LRUCache(maxsize=4096)


@dataclass(frozen=True, slots=True)
class RawArtifact:
    name: str
    mime: str
    data: bytes


@dataclass(slots=True)
class ToolOutcome:
    ok: bool
    text: str  # what the model sees (before size limiting)
    results: Any = None  # the V2 `results`, or structured content
    artifacts: list[RawArtifact] = field(default_factory=list)
    display: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)  # problems met while parsing (dropped artifacts)
    resource_links: list[tuple[str, str]] = field(default_factory=list)  # (name, uri) still to fetch
    duration_ms: int = 0
    mcp_result: dict[str, Any] | None = None  # the CallToolResult as JSON, when asked for (MCP Apps)
    task: Any = None  # a TaskHandle (tools/tasks.py) when the server took the call on as a task


@dataclass(slots=True)
class ServerStatus:
    name: str
    status: str  # starting | ready | failed | disabled
    transport: str
    reason: str | None = None
    stderr_tail: str | None = None  # the end of a failed stdio server's stderr (administrators only)
    stderr_log: str | None = None  # where all of it is
    ready_after_s: float | None = None
    tool_count: int = 0
    protocol_version: str | None = None  # negotiated with the server on its last connect


class CallSink(Protocol):
    """Where one tool call's side-channel traffic goes (progress, logs, and
    server requests made on the call's behalf). A sink may have an `owner` (the user's turn):
    a server request that names no call may go to any call of the same owner."""

    async def progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def log(self, level: str, message: str) -> None: ...

    async def elicit(self, message: str, schema: dict[str, Any]) -> tuple[str, dict[str, Any] | None]: ...

    async def sample(self, messages: list[dict[str, Any]], system_prompt: str | None, max_tokens: int) -> str: ...
