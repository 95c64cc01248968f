"""The pool's traffic with its servers: tool calls (bounded per session), resources, apps'
`ui://` resources, prompts, skills and tasks, each on the right session (a per-user server's on the
user's own)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp import MCPError

from ...errors import NeedsAuth, ServerUnavailable, ToolError
from ...telemetry import mcp_span
from ..apps import AppResource, parse_app_resource
from ..models import CallSink, RawArtifact, ToolInfo, ToolOutcome
from ..results import add_resource_contents, finish_text, parse_result
from ..skills import SkillEntry, bytes_of, text_of, verify_skill_file
from ..tasks import TaskChannel, TaskHandle
from .connection import ServerConnection
from .user_sessions import UserSessions

if TYPE_CHECKING:
    from ..apps import AppResources
    from ..oauth.flow import SignIns

__all__ = ["CallBounds", "PoolTraffic"]

MAX_RESOURCE_LINKS = 10


@dataclass(frozen=True, slots=True)
class CallBounds:
    concurrency: int  # requests in flight per server
    max_artifact_bytes: int  # a result's file larger than this is not kept


class PoolTraffic:
    """Part of `ServerPool` (pool.py): requests to its servers."""

    connections: dict[str, ServerConnection | UserSessions]
    sign_ins: SignIns
    apps: AppResources
    _limits: dict[str, asyncio.Semaphore]
    _bounds: CallBounds

    def resources_of(self, server: str, user: str) -> tuple[list[Any], list[Any], list[Any]]:
        """The server's resources, resource templates and prompts as `user` may see them: a
        per-user server's are those of the user's own session, never another user's."""
        conn = self.connections.get(server)
        if isinstance(conn, UserSessions):
            listing = conn.listing_of(user)
            return (listing.resources, listing.resource_templates, listing.prompts) if listing else ([], [], [])
        if conn is None or conn.status.status != "ready":
            return [], [], []
        return conn.resources, conn.resource_templates, conn.prompts

    async def _session(self, server: str, user: str | None) -> ServerConnection:
        conn = self.connections.get(server)
        if conn is None:
            raise ToolError(f"there is no server named '{server}'")
        if isinstance(conn, UserSessions):
            if user is None:
                raise ToolError(f"server '{server}' has one session per user; no user was given")
            return await conn.session_for(user)
        return conn

    async def read_resource(self, server: str, uri: str, user: str | None = None) -> list[RawArtifact]:
        """A resource's contents as raw files (text or bytes)."""
        conn = await self._session(server, user)
        outcome = ToolOutcome(ok=True, text="")
        with mcp_span("resources/read", uri, server=server, address=_address(conn)):
            contents = await conn.read_resource(uri)
        add_resource_contents(outcome, uri.rsplit("/", 1)[-1] or "resource", contents, self._bounds.max_artifact_bytes)
        if outcome.notes:
            raise ToolError("; ".join(outcome.notes))
        return outcome.artifacts

    async def app_resource(self, tool: ToolInfo, user: str | None = None) -> AppResource:
        """The app (`ui://` resource) of an app tool, read from its server on the user's session."""
        if tool.app_uri is None:
            raise ToolError(f"the tool '{tool.qualified_name}' has no app")
        uri = tool.app_uri
        conn = await self._session(tool.server, user)

        async def read() -> AppResource:
            return parse_app_resource(
                tool.server, uri, await conn.read_resource(uri), conn.resources, self._bounds.max_artifact_bytes
            )

        return await self.apps.get(tool.server, conn.user, uri, read)

    async def read_resource_json(self, server: str, uri: str, user: str | None = None) -> dict[str, Any]:
        """`resources/read` of a server, answered as MCP JSON (for an app of that server)."""
        contents = await (await self._session(server, user)).read_resource(uri)
        return {"contents": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in contents]}

    async def get_prompt(
        self, server: str, name: str, arguments: dict[str, str], user: str | None = None
    ) -> list[tuple[str, str]]:
        conn = await self._session(server, user)
        with mcp_span("prompts/get", name, server=server, address=_address(conn)):
            return await conn.get_prompt(name, arguments)

    async def tasks_of(self, server: str, user: str | None) -> TaskChannel:
        """`tasks/*` requests to `server` (on `user`'s own session for a per-user server)."""
        conn = await self._session(server, user)
        if conn.status.status != "ready":
            raise ServerUnavailable(f"server '{server}' is {conn.status.status}")
        return TaskChannel(server, conn.task_session())

    def skills(self, user: str | None) -> list[SkillEntry]:
        """The skills listed by the ready servers (per-user servers: on `user`'s open session)."""
        out: list[SkillEntry] = []
        for conn in self.connections.values():
            session = conn.session_of(user) if isinstance(conn, UserSessions) and user is not None else conn
            if isinstance(session, ServerConnection) and session.status.status == "ready":
                out.extend(session.skills)
        return out

    async def read_skill_file(self, entry: SkillEntry, uri: str, user: str | None = None) -> str:
        """A file of a skill, read when the model uses the skill and verified against its listing
        (`SkillRejected` otherwise)."""
        conn = await self._session(entry.server, user)
        with mcp_span("resources/read", uri, server=entry.server, address=_address(conn)):
            data = bytes_of(await conn.read_resource(uri))
        verify_skill_file(entry, uri, data)
        return text_of(data)

    async def call(
        self, tool: ToolInfo, arguments: dict[str, Any], sink: CallSink, *, user: str | None = None, raw: bool = False
    ) -> ToolOutcome:
        """Run one call (on `user`'s own session for a per-user server).  Raises the ToolError
        tree; the caller turns it into data."""
        started = time.monotonic()
        conn = await self._session(tool.server, user)
        key = tool.server if conn.user is None else f"{tool.server}\n{conn.user}"  # per session
        async with self._limits.setdefault(key, asyncio.Semaphore(self._bounds.concurrency)):
            try:
                with mcp_span(
                    "tools/call",
                    tool.qualified_name,
                    server=tool.server,
                    address=_address(conn),
                    tool=tool.qualified_name,
                ):
                    result = await conn.call(tool.name, arguments, sink)
                if isinstance(result, TaskHandle):
                    return ToolOutcome(
                        ok=True,
                        text=f"started as task {result.task_id}",
                        task=result,
                        duration_ms=int((time.monotonic() - started) * 1000),
                    )
            except ServerUnavailable:
                if user is not None and await self.sign_ins.step_up_wanted(tool.server, user):
                    raise NeedsAuth(
                        f"server '{tool.server}' needs more permissions for '{tool.name}': press Connect "
                        f"next to '{tool.server}' to allow them, then try again"
                    ) from None
                raise
        outcome = await self._outcome(conn, result, raw=raw)
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        return outcome

    async def task_outcome(self, server: str, user: str | None, result: Any) -> ToolOutcome:
        """A finished task's result, parsed as a call's result is."""
        return await self._outcome(await self._session(server, user), result)

    async def _outcome(self, conn: ServerConnection, result: Any, *, raw: bool = False) -> ToolOutcome:
        outcome = parse_result(result, max_artifact_bytes=self._bounds.max_artifact_bytes)
        if raw:  # an app gets the whole MCP result (content blocks, structuredContent, _meta)
            outcome.mcp_result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        for name, uri in outcome.resource_links[:MAX_RESOURCE_LINKS]:
            try:
                contents = await conn.read_resource(uri)
            except (MCPError, ToolError) as exc:
                outcome.notes.append(f"could not read linked resource {uri}: {getattr(exc, 'message', exc)}")
                continue
            add_resource_contents(outcome, name, contents, self._bounds.max_artifact_bytes)
        for name, uri in outcome.resource_links[MAX_RESOURCE_LINKS:]:
            outcome.notes.append(f"linked resource {name} <{uri}> not fetched (more than {MAX_RESOURCE_LINKS} links)")
        finish_text(outcome)
        return outcome


def _address(conn: ServerConnection) -> str | None:
    """The host of a remote server (``server.address``); none for stdio."""
    return urlsplit(conn.config.url).hostname if conn.config.url else None
