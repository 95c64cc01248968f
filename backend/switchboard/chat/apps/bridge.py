"""MCP Apps as the conversation sees them: what the page needs to mount an app that a tool call
produced (`describe`), and the app's requests through the host (`rpc`).

An app's `tools/call` is a real call: it runs through the one CallRunner, as the user, at
the conversation's compliance level, with approval, pinning and host-filled arguments; it
may reach only the app's own server (its app-only tools included); its events reach every
page that shows the conversation, and it is logged and kept with the app's tool message."""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...errors import (
    BadRequest,
    Forbidden,
    NotARequest,
    NotFound,
    RateLimited,
    SwitchboardError,
    ToolError,
    ToolQuarantined,
)
from ...identity.access import Access
from ...identity.users import User
from ...llm.types import ToolCallRequest
from ...store import Conversation, Message
from ...store.message_data import AppCall, AppData, MessageData
from ...tools import ServerPool, ToolInfo
from ...tools.apps import features_of, permissions_of
from ..calls.runner import CallRunner, ExecutedCall
from ..events import ServerEvent
from ..turns import TurnHub
from .context import model_context_of

__all__ = ["AppBridge", "AppLimits", "RequestBuckets"]

log = logging.getLogger("switchboard.chat")

USER_FACTOR = 5  # all of one user's apps together may send this many times one app's rate
MAX_KEPT_CALLS = 100  # an app's own calls kept with its tool message (the log has every one)


@dataclass(frozen=True, slots=True)
class AppLimits:
    requests_per_s: float = 10.0
    burst: int = 20


class RequestBuckets:
    """Token buckets per user, and per (user, app call id) inside it: `burst` requests at once,
    refilled at `rate` per second. The user's bucket is checked first, so a refused request
    keeps nothing; each user keeps at most `max_calls` app buckets (their own oldest go first),
    so one user's made-up call ids never push out anyone else's bucket."""

    def __init__(self, limits: AppLimits, max_users: int = 10_000, max_calls: int = 64) -> None:
        self._limits = limits
        self._max_users = max_users
        self._max_calls = max_calls
        self._users: OrderedDict[str, _UserBuckets] = OrderedDict()

    def __len__(self) -> int:
        """How many buckets are kept (users' and apps')."""
        return sum(1 + len(u.calls) for u in self._users.values())

    def take(self, user: str, call_id: str) -> None:
        """One request of this app; RateLimited past its bucket, or past USER_FACTOR times it for
        all of the user's apps together (made-up call ids get a bucket each, the user does not)."""
        now = time.monotonic()
        rate, burst = self._limits.requests_per_s, float(self._limits.burst)
        entry = self._users.pop(user, None) or _UserBuckets(burst * USER_FACTOR, now, OrderedDict())
        self._users[user] = entry
        while len(self._users) > self._max_users:
            self._users.popitem(last=False)
        user_tokens = min(burst * USER_FACTOR, entry.tokens + (now - entry.at) * rate * USER_FACTOR)
        entry.tokens, entry.at = user_tokens, now
        if user_tokens < 1:
            raise RateLimited(f"too many requests from your apps (at most {rate * USER_FACTOR:g} per second)")
        tokens, at = entry.calls.pop(call_id, (burst, now))
        tokens = min(burst, tokens + (now - at) * rate)
        if tokens < 1:
            entry.calls[call_id] = (tokens, now)
            raise RateLimited(f"too many requests from this app (at most {rate:g} per second)")
        entry.calls[call_id] = (tokens - 1, now)
        entry.tokens = user_tokens - 1
        while len(entry.calls) > self._max_calls:
            entry.calls.popitem(last=False)


@dataclass(slots=True)
class _UserBuckets:
    tokens: float
    at: float
    calls: OrderedDict[str, tuple[float, float]]


@dataclass(frozen=True, slots=True)
class _Mounted:
    """The tool call an app was mounted for."""

    conversation: Conversation
    message: Message
    call_id: str
    server: str
    tool: str  # qualified
    resource_uri: str


Handler = Callable[[User, _Mounted, dict[str, Any]], Awaitable[dict[str, Any]]]


class AppBridge:
    def __init__(self, hub: TurnHub, calls: CallRunner, pool: ServerPool, limits: AppLimits | None = None) -> None:
        self._hub = hub
        self._calls = calls
        self._pool = pool
        self._buckets = RequestBuckets(limits or AppLimits())
        self._methods: dict[str, Handler] = {
            "tools/call": self._call_tool,
            "resources/read": self._read_resource,
            "ui/update-model-context": self._update_model_context,
            "notifications/message": self._log,
        }

    def _access(self, user: User, conversation: Conversation) -> Access:
        return Access(user, conversation.compliance_level, self._hub.engine.config.compliance)

    async def _mounted(self, user: User, call_id: str) -> _Mounted:
        found = await self._hub.conversations.store.find_tool_call(user.email, call_id)
        app = found[1].data.get("app") if found is not None else None
        if found is None or not isinstance(app, dict) or not isinstance(app.get("resource_uri"), str):
            raise NotFound(f"there is no app of yours for call '{call_id}'")
        conversation, message = found
        return _Mounted(
            conversation,
            message,
            call_id,
            str(message.data.get("server", "")),
            str(message.data.get("tool", "")),
            app["resource_uri"],
        )

    def _tool(self, user: User, mounted: _Mounted) -> ToolInfo:
        """The app's tool, if the user may still use its server in this conversation."""
        registry = self._pool.registry
        if not registry.server_admits(mounted.server, self._access(user, mounted.conversation)):
            raise Forbidden(f"you may not use server '{mounted.server}' in this conversation")
        tool = registry.get(mounted.tool)
        if tool is None or tool.server != mounted.server or tool.app_uri is None:
            raise ToolError(f"server '{mounted.server}' does not offer the app's tool now; try again later")
        return tool

    # -- mounting ---------------------------------------------------------------------------

    async def describe(self, user: User, call_id: str) -> dict[str, Any]:
        """Everything the page needs to mount the app of this call (owner only)."""
        mounted = await self._mounted(user, call_id)
        tool = self._tool(user, mounted)
        resource = await self._pool.app_resource(tool, user.email)
        ran_with = (mounted.message.data.get("app") or {}).get("digest")
        if resource.digest != ran_with and self._pool.registry.check_app(tool, resource.digest):
            raise Forbidden(
                "the server's app changed since this call and is not approved yet",
                action="Run the tool again: the changed app is shown once its call is approved.",
            )
        config = self._pool.registry.config_of(tool.server)
        permissions = permissions_of(resource.permissions_declared, config.app_permissions if config else [])
        data = mounted.message.data
        result = data.get("mcp_result") or {
            "content": [{"type": "text", "text": mounted.message.content}],
            "isError": not data.get("ok"),
        }
        return {
            "call_id": call_id,
            "conversation_id": mounted.conversation.id,
            "server": tool.server,
            "tool": {
                "name": tool.name,
                "title": tool.title,
                "description": tool.description,
                "inputSchema": tool.input_schema,
                "annotations": tool.annotations,
            },
            "qualified_tool": tool.qualified_name,
            "resource_uri": resource.uri,
            "html": resource.html,
            "csp": resource.csp,
            "permissions": permissions,
            "allow": features_of(permissions),  # the frames' Permissions-Policy features
            "prefers_border": resource.prefers_border,
            "tool_input": data.get("arguments") or {},
            "tool_result": result,
        }

    # -- the app's requests -----------------------------------------------------------------

    async def rpc(self, user: User, call_id: str, body: Any) -> dict[str, Any]:
        """Answer one request of the app mounted for `call_id`: `{"result": ...}`; raises the
        error tree (BadRequest, Forbidden, NotFound, RateLimited, ToolError), each refusal logged."""
        try:
            return await self._answer(user, call_id, body)
        except SwitchboardError as exc:
            method = body.get("method") if isinstance(body, dict) else None
            log.warning(
                "refused an app's request",
                extra={
                    "event": "app_request_refused",
                    "user": user.email,
                    "app": call_id[:100],
                    "code": exc.code,
                    "method": str(method)[:100] if method is not None else None,
                    "error": exc.message[:500],
                },
            )
            raise

    async def _answer(self, user: User, call_id: str, body: Any) -> dict[str, Any]:
        self._buckets.take(user.email, call_id)
        if not isinstance(body, dict) or not isinstance(body.get("method"), str):
            raise NotARequest("send a JSON object with a 'method' (string) and 'params' (object)")
        params = body.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise NotARequest("'params' must be an object")
        mounted = await self._mounted(user, call_id)
        handler = self._methods.get(body["method"])
        if handler is None:
            raise NotFound(f"the host does not answer '{body['method'][:100]}' from apps")
        return {"result": await handler(user, mounted, params)}

    async def _call_tool(self, user: User, mounted: _Mounted, params: dict[str, Any]) -> dict[str, Any]:
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict | None):
            raise BadRequest("tools/call takes 'name' (string) and 'arguments' (object)")
        registry = self._pool.registry
        tool = registry.of_server(mounted.server, name)
        if tool is None or "app" not in tool.visibility:
            raise Forbidden(
                f"an app may call only tools of its own server '{mounted.server}' that apps may "
                f"call; '{name[:100]}' is not one"
            )
        if not tool.approved:
            raise ToolQuarantined(tool.qualified_name, tool.trust)
        turn = await self._hub.conversations.call_turn(user, mounted.conversation)
        access = self._access(user, mounted.conversation)
        offered = {
            t.qualified_name for t in registry.visible(access) if t.server == mounted.server and "app" in t.visibility
        }
        request = ToolCallRequest(
            id=f"call_{secrets.token_urlsafe(9)}", name=tool.qualified_name, arguments=json.dumps(arguments or {})
        )
        conversation_id = mounted.conversation.id

        async def emit(event: ServerEvent) -> None:
            self._hub.pages.publish(user.email, conversation_id, event)

        with self._hub.app_call(turn):
            executed = await self._calls.run(request, turn=turn, offered=offered, emit=emit, from_app=mounted.call_id)
        self._hub.pages.publish(user.email, conversation_id, executed.event)
        await self._keep(mounted, executed, turn.writes.new_allowances)
        if not executed.ran:
            raise Forbidden(executed.event.content)
        return executed.mcp_result or {
            "content": [{"type": "text", "text": executed.event.content}],
            "isError": not executed.event.ok,
        }

    async def _keep(self, mounted: _Mounted, executed: ExecutedCall, allowances: list[str]) -> None:
        """Keep the app's call with its tool message (and any "allow for this conversation")."""
        store = self._hub.conversations.store
        for key in allowances:
            await store.add_allowance(mounted.conversation.id, key)
        event = executed.event
        entry: AppCall = {
            "call_id": event.call_id,
            "tool": event.tool,
            "ok": event.ok,
            "ran": executed.ran,
            "arguments": executed.arguments,
            "duration_ms": event.duration_ms,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if not executed.ran:
            entry["refused"] = event.content[:500]

        def add(data: MessageData) -> MessageData:
            app = (data.get("app") or AppData()).copy()
            app["calls"] = [*(app.get("calls") or []), entry][-MAX_KEPT_CALLS:]
            return {**data, "app": app}

        await store.change_message_data(mounted.conversation.id, mounted.message.id, add)

    async def _read_resource(self, user: User, mounted: _Mounted, params: dict[str, Any]) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri:
            raise BadRequest("resources/read takes 'uri' (string)")
        self._tool(user, mounted)  # the user may still use the server here
        log.info(
            "app read a resource",
            extra={
                "event": "app_resource_read",
                "user": user.email,
                "server": mounted.server,
                "uri": uri[:500],
                "app": mounted.call_id,
            },
        )
        return await self._pool.read_resource_json(mounted.server, uri, user.email)

    async def _update_model_context(self, user: User, mounted: _Mounted, params: dict[str, Any]) -> dict[str, Any]:
        text = model_context_of(params)
        self._tool(user, mounted)  # the user may still use the server here, as for tools/call

        def put(data: MessageData) -> MessageData:
            app = (data.get("app") or AppData()).copy()
            if text:
                app["model_context"] = text
            else:
                app.pop("model_context", None)
            return {**data, "app": app}

        await self._hub.conversations.store.change_message_data(mounted.conversation.id, mounted.message.id, put)
        return {}

    async def _log(self, user: User, mounted: _Mounted, params: dict[str, Any]) -> dict[str, Any]:
        given = params.get("level")
        level = given if isinstance(given, str) else "info"
        data = params.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
        log.info(
            "app log: %s",
            text[:2000],
            extra={
                "event": "app_log",
                "user": user.email,
                "server": mounted.server,
                "app": mounted.call_id,
                "app_level": level[:20],
                "app_logger": str(params.get("logger") or "")[:200],
            },
        )
        return {}
