"""The namespaced tool registry: qualified name -> (server, tool), built as
servers connect.  Qualified names are never split to find a server.

A shared server's tools are one catalogue.  A per-user server's tools are what
each user's own session listed, offered to that user only (`visible`,
`authorize` and `all` take the user).

Each tool carries its trust state (tools/trust.py): the tools panel lists every tool (`visible`),
but only approved ones are offered to the model, searched by the gateway or called."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import mcp_types

from ..config.models import ServerConfig
from ..errors import ToolNotAllowed, ToolQuarantined
from ..identity.access import Access
from .apps import app_fields
from .models import ToolInfo
from .naming import qualify
from .pins import ToolPins
from .search import ToolIndex
from .trust import Trust

__all__ = ["ToolRegistry"]


def _annotations(tool: mcp_types.Tool) -> dict[str, object]:
    if tool.annotations is None:
        return {}
    return tool.annotations.model_dump(by_alias=True, exclude_none=True)


class ToolRegistry:
    def __init__(self, pins: ToolPins | None = None, trust: Trust | None = None) -> None:
        self._pins = pins or ToolPins()
        self.trust = trust or Trust()
        self._names: dict[tuple[str, str], str] = {}  # stable for the app's life
        self._tools: dict[str, ToolInfo] = {}
        self._user_tools: dict[str, dict[str, ToolInfo]] = {}  # per-user servers' tools: user -> name -> tool
        self._configs: dict[str, ServerConfig] = {}
        self._index: ToolIndex | None = None
        self._instructions: dict[str, str] = {}
        self.version = 0  # bumps whenever a tool is added, removed or redefined

    def rebuild(
        self,
        servers: Iterable[tuple[str, ServerConfig, list[mcp_types.Tool]]],
        per_user: Mapping[str, Mapping[str, Sequence[mcp_types.Tool]]] | None = None,
        instructions: Mapping[str, str] | None = None,
    ) -> None:
        """`servers`: (name, config, shared listing); `per_user`: server -> user -> what that
        user's own session listed; `instructions`: each server's (part of its tools' pins)."""
        tools: dict[str, ToolInfo] = {}
        configs: dict[str, ServerConfig] = {}
        self._instructions = dict(instructions or {})
        for server, config, listed in servers:
            configs[server] = config
            tools.update(self._infos(server, config, listed))
        user_tools: dict[str, dict[str, ToolInfo]] = {}
        for server, listings in (per_user or {}).items():
            shared = configs.get(server)
            for user, own in listings.items():
                if shared is not None:
                    user_tools.setdefault(user, {}).update(self._infos(server, shared, own))
        self._tools, self._user_tools, self._configs = tools, user_tools, configs
        self.version += 1
        self._index = None  # built again on the next search, not per query

    def _infos(self, server: str, config: ServerConfig, listed: Iterable[mcp_types.Tool]) -> dict[str, ToolInfo]:
        infos: dict[str, ToolInfo] = {}
        for tool in listed:
            if config.tools is not None and not config.tools.admits(tool.name):
                continue
            if tool.execution is not None and tool.execution.task_support == "required":
                continue  # runs only as an MCP task, which the host does not support yet
            key = (server, tool.name)
            if key not in self._names:
                self._names[key] = qualify(server, tool.name, set(self._names.values()))
            name = self._names[key]
            description, schema, annotations = tool.description or "", dict(tool.input_schema or {}), _annotations(tool)
            pin, definition = self.trust.pin(server, tool, self._instructions.get(server, ""))
            state = self.trust.state(server, tool.name, pin, definition, config.trust)
            app_uri, visibility = app_fields(tool.meta)
            infos[name] = ToolInfo(
                qualified_name=name,
                server=server,
                name=tool.name,
                description=description,
                input_schema=schema,
                annotations=annotations,
                title=tool.title,
                definition_hash=pin,
                trust=state,
                app_uri=app_uri,
                visibility=visibility,
            )
        return infos

    @property
    def index(self) -> ToolIndex:
        """The search index of the shared catalogue (callers filter by what a user may use)."""
        if self._index is None:
            self._index = ToolIndex([t for t in self._tools.values() if t.approved], self._descriptions())
        return self._index

    def _descriptions(self) -> dict[str, str]:
        return {s: c.description for s, c in self._configs.items()}

    def index_for(self, tools: Sequence[ToolInfo]) -> ToolIndex:
        """A search index holding these tools: the shared one, unless some are a user's own
        (a per-user server's), which only a user's own index may hold."""
        if all(self._tools.get(t.qualified_name) is t for t in tools):
            return self.index
        return ToolIndex(tools, self._descriptions())

    def get(self, name: str, user: str | None = None) -> ToolInfo | None:
        tool = self._tools.get(name)
        if tool is None and user is not None:
            tool = self._user_tools.get(user, {}).get(name)
        return tool

    def all(self, user: str | None = None) -> list[ToolInfo]:
        """The shared tools, and `user`'s own tools of per-user servers."""
        mine = self._user_tools.get(user, {}) if user is not None else {}
        return [*self._tools.values(), *mine.values()]

    def every_tool(self) -> list[ToolInfo]:
        """Every tool listed: the shared ones and every user's own (once each), for administrators."""
        found = dict(self._tools)
        for tools in self._user_tools.values():
            for name, tool in tools.items():
                found.setdefault(name, tool)
        return list(found.values())

    def config_of(self, server: str) -> ServerConfig | None:
        return self._configs.get(server)

    def server_admits(self, server: str, access: Access) -> bool:
        """May this user use this server (tools, resources, prompts) in this conversation?"""
        return access.may_use_server(self._configs.get(server))

    def visible(self, access: Access) -> list[ToolInfo]:
        return [t for t in self.all(access.email) if access.may_use_server(self._configs.get(t.server))]

    def for_model(self, access: Access) -> list[ToolInfo]:
        """What the model may be offered: `visible` without the tools only apps may call, nor
        the tools an administrator has not approved."""
        return [t for t in self.visible(access) if t.model_visible and t.approved]

    def of_server(self, server: str, name: str) -> ToolInfo | None:
        """The tool a server calls `name` (an app names its own server's tools so)."""
        return next((t for t in self._tools.values() if t.server == server and t.name == name), None)

    def accept_app(self, tool: ToolInfo, digest: str) -> None:
        """Pin a changed app of this tool as the trusted one (an administrator approved it)."""
        if tool.app_uri is not None:
            self._pins.accept_app(tool.server, tool.name, tool.app_uri, digest)

    def check_app(self, tool: ToolInfo, digest: str) -> bool:
        """Whether the tool's app changed since it was first seen (pins it the first time)."""
        return tool.app_uri is not None and self._pins.check_app(tool.server, tool.name, tool.app_uri, digest)

    def authorize(self, name: str, access: Access) -> ToolInfo:
        """The tool behind `name`, if this user may run it in this conversation."""
        tool = self.get(name, access.email)
        if tool is None:
            raise ToolNotAllowed(f"there is no tool named '{name}'")
        if not access.may_use_server(self._configs.get(tool.server)):
            raise ToolNotAllowed(f"you are not allowed to use the tool '{name}'")
        if not tool.approved:
            raise ToolQuarantined(name, tool.trust)
        return tool
