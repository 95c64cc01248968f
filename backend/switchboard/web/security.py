"""Security headers, the origin check, and the error-to-status map."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BadRequest, Forbidden, NotFound, SwitchboardError, ToolError, Unauthorized

__all__ = ["ARTIFACT_CSP", "ARTIFACT_CSP_SCRIPTS", "PAGE_CSP", "PDF_CSP", "SecurityHeadersMiddleware", "http_status", "origin_allowed"]

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


def origin_allowed(origin: str | None, host: str | None, allowed: list[str]) -> bool:
    """A browser websocket must come from the app's own origin or an allowed one.
    Clients that send no Origin (not browsers) are not subject to this check."""
    if origin is None:
        return True
    if origin in allowed or "*" in allowed:
        return True
    parts = urlsplit(origin)
    return bool(host) and parts.netloc == host and parts.scheme in ("http", "https")


def http_status(exc: SwitchboardError) -> int:
    if isinstance(exc, Unauthorized):
        return 401
    if isinstance(exc, Forbidden):
        return 403
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, BadRequest):
        return 400
    if isinstance(exc, ToolError):
        return 502  # the MCP server behind the request failed
    return 500
