"""Security headers, and the Host and Origin checks."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BadRequest, Forbidden
from ..settings import Settings
from .error_render import WireError, render, style_for

__all__ = [
    "ARTIFACT_CSP",
    "ARTIFACT_CSP_SCRIPTS",
    "PAGE_CSP",
    "PDF_CSP",
    "EdgePolicy",
    "RequestGuardMiddleware",
    "SecurityHeadersMiddleware",
    "refuse_websocket",
]

log = logging.getLogger("switchboard.web")

PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "frame-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# Artifacts (HTML especially) render in an opaque-origin sandbox, reach nothing
# on the network, and may only be framed by the app itself.  They run no
# script: CSP does not govern WebRTC, so a script could still send data out.
ARTIFACT_CSP = (
    "sandbox; default-src 'none'; img-src data: blob:; media-src data: blob:; "
    "style-src 'unsafe-inline'; script-src 'none'; font-src data:; frame-ancestors 'self'"
)
# HTML artifacts of a server trusted with `"artifact_scripts": true` in mcp.json.
ARTIFACT_CSP_SCRIPTS = (
    "sandbox allow-scripts; default-src 'none'; img-src data: blob:; media-src data: blob:; "
    "style-src 'unsafe-inline'; script-src 'unsafe-inline'; font-src data:; frame-ancestors 'self'"
)

# Chromium's PDF viewer refuses to run in a sandboxed document; a PDF runs no
# script of the page's, so it only needs to be kept in the app's own frames.
PDF_CSP = "frame-ancestors 'self'"

_COMMON = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-dns-prefetch-control", b"off"),  # no name lookups for links in what the page shows
]


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers.extend(h for h in _COMMON if h[0] not in names)
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", PAGE_CSP.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


# -- Host and Origin -------------------------------------------------------------------------

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def split_host(value: str) -> tuple[str, int | None]:
    """`Example.COM:8000` -> ("example.com", 8000); `[::1]` -> ("::1", None). ValueError if malformed."""
    value = value.strip().lower()
    port: str | None = None
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(value)
        port = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, port = value.split(":")
    else:
        name = value
    name = name.rstrip(".")
    if not name or any(c in name for c in "/@?#\\ ") or (port is not None and not port.isdigit()):
        raise ValueError(value)
    return name, int(port) if port else None


def _origin_key(scheme: str, host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port if port is not None else _DEFAULT_PORTS.get(scheme, 0)}"


def _parse_origin(origin: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname.rstrip("."), port


@dataclass(frozen=True, slots=True)
class EdgePolicy:
    """Which Host headers the app answers and which browser origins may use it.

    Hosts: the loopback names, the host of `public_url`, and `allowed_hosts`
    (`*` turns the check off; `*.example.com` admits any subdomain).  Origins:
    the origin of `public_url`, `allowed_origins` (`*` admits any), and the
    exactly named hosts (loopback, public, plain `allowed_hosts` entries) on the
    app's own port or on the port the request's Host names.  A Host counts only
    when it is such a name: a rebinding site sends its own name as Host."""

    hosts: frozenset[str]
    host_suffixes: tuple[str, ...]
    any_host: bool
    origins: frozenset[str]
    any_origin: bool
    port: int

    @classmethod
    def from_settings(cls, settings: Settings) -> EdgePolicy:
        hosts, suffixes, origins = set(LOCAL_HOSTS), [], set()
        any_host = "*" in settings.allowed_hosts
        for entry in settings.allowed_hosts:
            try:
                if entry.startswith("*.") and len(entry) > 2:
                    suffixes.append("." + split_host(entry[2:])[0])
                elif entry != "*":
                    hosts.add(split_host(entry)[0])
            except ValueError:
                raise ValueError(
                    f"SWITCHBOARD_ALLOWED_HOSTS: {entry!r} is not a host name "
                    '(e.g. "chat.example.com", "*.example.com" or "*")'
                ) from None
        if settings.public_url:
            public = _parse_origin(settings.public_url)
            if public is None:
                raise ValueError(f"SWITCHBOARD_PUBLIC_URL must be an http(s) URL, not {settings.public_url!r}")
            hosts.add(public[1])
            origins.add(_origin_key(*public))
        for entry in settings.allowed_origins:
            parsed = _parse_origin(entry)
            if parsed is None and entry != "*":
                raise ValueError(
                    f'SWITCHBOARD_ALLOWED_ORIGINS: {entry!r} is not an origin (e.g. "https://chat.example.com" or "*")'
                )
            if parsed is not None:
                origins.add(_origin_key(*parsed))
        return cls(
            frozenset(hosts),
            tuple(suffixes),
            any_host,
            frozenset(origins),
            "*" in settings.allowed_origins,
            settings.port,
        )

    def host_allowed(self, host_header: str) -> bool:
        if self.any_host:
            return True
        try:
            name = split_host(host_header)[0]
        except ValueError:
            return False
        return name in self.hosts or name.endswith(self.host_suffixes)

    def origin_allowed(self, origin: str, host_header: str | None = None, server_port: int | None = None) -> bool:
        if self.any_origin:
            return True
        parsed = _parse_origin(origin)
        if parsed is None:
            return False  # "null" (sandboxed frames, file:) and anything odd
        if _origin_key(*parsed) in self.origins:
            return True
        scheme, name, port = parsed
        if name not in self.hosts:
            return False  # wildcard entries admit a Host, never an origin
        port = port or _DEFAULT_PORTS[scheme]
        if port in {self.port, server_port}:
            return True
        # Same origin as the request (e.g. a proxy on another port that passes Host through):
        # safe because the Host is an exactly named host, never a rebinding site's own name.
        try:
            host_name, host_port = split_host(host_header or "")
        except ValueError:
            return False
        return (host_name, host_port or _DEFAULT_PORTS[scheme]) == (name, port)


def _printable(value: str) -> str:
    return "".join(c for c in value if " " <= c <= "~")[:100]


class RequestGuardMiddleware:
    """Refuses, before any route runs: an unknown Host (400, DNS rebinding), a
    websocket from a foreign Origin (accepted, then closed with 1008), and a
    state-changing request from a foreign Origin or `Sec-Fetch-Site: cross-site`
    (403, cross-site request forgery).  Requests without Origin (API clients) pass.

    Starlette's TrustedHostMiddleware does not fit the Host half: it cannot exempt `/healthz`
    (probes use the pod's address, a per-request rule), it takes the first of several Host
    headers instead of refusing them, it does not fold a trailing dot (`localhost.`), and it
    answers plain text where every refusal here is the API's JSON error (or, on a websocket,
    a denial) with an `action` naming the setting to change. The Origin half needs the same
    parsed host names (`EdgePolicy`) anyway."""

    def __init__(self, app: ASGIApp, policy: EdgePolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        hosts = headers.getlist("host")
        exempt = kind == "http" and scope.get("path") == "/healthz"  # probes use whatever address reaches the pod
        if not exempt and (len(hosts) != 1 or not self.policy.host_allowed(hosts[0])):
            shown = _printable(hosts[0]) if hosts else ""
            name = shown.rsplit(":", 1)[0] if shown.count(":") == 1 else shown
            log.warning("refused a request for an unknown host", extra={"event": "host_refused", "host": shown})
            unknown = BadRequest(
                f"Switchboard does not answer to the host name '{shown}'",
                action="Open Switchboard at its configured address. To serve it under this name, add the name to "
                f'SWITCHBOARD_ALLOWED_HOSTS (a JSON list, e.g. ["{name}"]) or set SWITCHBOARD_PUBLIC_URL '
                "to the address your users open.",
            )
            wire = render(unknown, style_for(scope.get("path", "")))
            await (_deny_websocket(scope, receive, send, wire) if kind == "websocket" else _respond(send, wire))
            return
        origins = headers.getlist("origin")
        server = scope.get("server")
        server_port = server[1] if server else None
        foreign = len(origins) > 1 or (
            origins and not self.policy.origin_allowed(origins[0], hosts[0] if hosts else None, server_port)
        )
        shown_origin = _printable(origins[0]) if origins else ""
        if kind == "websocket":
            if foreign:
                log.warning("refused cross-origin websocket", extra={"event": "ws_refused", "origin": shown_origin})
                await refuse_websocket(receive, send, "cross-origin websocket refused")
                return
        elif scope["method"] in _STATE_CHANGING and (foreign or headers.get("sec-fetch-site") == "cross-site"):
            log.warning(
                "refused a cross-site request",
                extra={"event": "csrf_refused", "origin": shown_origin, "path": scope.get("path")},
            )
            cross_site = Forbidden(
                f"refused a cross-site {scope['method']} request" + (f" from {shown_origin}" if shown_origin else ""),
                action="Use Switchboard from its own address. If this origin is a trusted front end, add it to "
                "SWITCHBOARD_ALLOWED_ORIGINS (a JSON list).",
            )
            await _respond(send, render(cross_site, style_for(scope.get("path", ""))))
            return
        await self.app(scope, receive, send)


async def refuse_websocket(receive: Receive, send: Send, reason: str) -> None:
    """Accept, then close with 1008: closing before accepting would reach the
    browser as an HTTP 403 handshake failure (close code 1006), not as 1008."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})


async def _respond(send: Send, wire: WireError) -> None:
    body = wire.json()
    await send(
        {
            "type": "http.response.start",
            "status": wire.status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _deny_websocket(scope: Scope, receive: Receive, send: Send, wire: WireError) -> None:
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if "websocket.http.response" in scope.get("extensions", {}):
        body = wire.json()
        await send(
            {
                "type": "websocket.http.response.start",
                "status": wire.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})
