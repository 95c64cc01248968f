"""The sandbox origin where MCP Apps run (the extension's double-iframe sandbox proxy).

An app's HTML never runs on the page's origin. The page frames `{sandbox}/proxy` (the outer
frame, on the sandbox origin), and that proxy page loads the app into an inner `srcdoc` frame
without `allow-same-origin`, so the app has an opaque origin of its own. The proxy's HTTP
`Content-Security-Policy` is built from the resource's declared `_meta.ui.csp` (passed in the
URL by the page) and the inner frame inherits it: nothing beyond what the resource declares.

The sandbox origin is `SWITCHBOARD_SANDBOX_ORIGIN` (e.g. `https://sandbox.example.com`, a name
that points at this same app). Unset, a page opened on a loopback name gets
`http://sandbox.localhost:<port>`: browsers resolve `*.localhost` to the loopback address
themselves, and it is another site than `127.0.0.1` or `localhost` (no shared cookies), served
by the same listener. A request whose Host is the sandbox name gets the proxy page, the CSP
report sink, or 404: never the API, the chat page or the websocket.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ...settings import Settings
from ..security import LOCAL_HOSTS, PAGE_CSP, split_host
from .csp_reports import CspReportLimiter

__all__ = ["LOCAL_SANDBOX_HOST", "SandboxMiddleware", "SandboxPolicy", "app_csp", "page_csp"]

log = logging.getLogger("switchboard.web")

LOCAL_SANDBOX_HOST = "sandbox.localhost"
_PROXY_HTML = Path(__file__).resolve().parents[4] / "frontend" / "sandbox" / "proxy.html"
# A CSP source the resource may declare: an origin, optionally with a `*.` subdomain wildcard
# or a `:*` port. No paths, quotes, keywords or separators: they could widen the policy.
_SOURCE = re.compile(
    r"^(https?|wss?)://(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:(\d{1,5}|\*))?$"
)
_CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
_MAX_SOURCES = 32
_MAX_CSP_PARAM = 8192


Page = tuple[str, int]  # a page origin's host name and port: the API an app must never reach


def _is_loopback(name: str) -> bool:
    return name in LOCAL_HOSTS or name == "0.0.0.0" or name.endswith(".localhost") or name.startswith("127.")


def _could_match(source: str, pages: Sequence[Page]) -> bool:
    """Whether a CSP source could match a page's origin, as a browser matches it: CSP lets `http`
    match `https` and `ws` match `http(s)`, so the scheme is ignored; a missing port matches 80 and
    443; a `*.` wildcard matches any subdomain; every loopback name reaches the same listener."""
    rest = source.split("://", 1)[1]
    host, _, port = rest.rpartition(":") if rest.rsplit(":", 1)[-1].isdigit() or rest.endswith(":*") else (rest, "", "")
    wildcard = host.startswith("*.")
    bare = host[2:] if wildcard else host
    for name, page_port in pages:
        if port == "*" or (port and int(port) == page_port) or (not port and page_port in (80, 443)):
            if wildcard:
                same = name.endswith("." + bare) or (
                    _is_loopback(name) and (bare == "localhost" or "127.0.0.1".endswith("." + bare))
                )
            else:
                same = bare == name or (_is_loopback(bare) and _is_loopback(name))
            if same:
                return True
    return False


def _sources(csp: dict, key: str, pages: Sequence[Page]) -> list[str]:
    values = csp.get(key)
    if not isinstance(values, list):
        return []
    kept: list[str] = []
    for value in values[:_MAX_SOURCES]:
        source = value.strip().lower().rstrip("/") if isinstance(value, str) else ""
        if _SOURCE.match(source) and not _could_match(source, pages):
            kept.append(source)
        else:
            log.warning(
                "dropped an app CSP source",
                extra={"event": "app_csp_source_dropped", "directive": key, "entry": str(value)[:100]},
            )
    return kept


def app_csp(csp: dict | None, pages: Sequence[Page] = ()) -> str:
    """The policy an app runs under: no network beyond the origins the resource declares (the
    default has none at all), and never a source that could match one of the `pages` (the chat
    page's own origins: its API). `'self'` (the sandbox origin, which serves nothing an app
    needs) is left out."""
    csp = csp if isinstance(csp, dict) else {}
    res = " ".join(_sources(csp, "resourceDomains", pages))
    connect = " ".join(_sources(csp, "connectDomains", pages)) or "'none'"
    frames = " ".join(_sources(csp, "frameDomains", pages)) or "'none'"
    base = " ".join(_sources(csp, "baseUriDomains", pages)) or "'self'"
    # blob:, data: and eval are code the app already holds (PDF.js and WebGL apps build workers
    # and modules from them); none of them reaches the network.
    parts = [
        "default-src 'none'",
        f"script-src 'unsafe-inline' 'unsafe-eval' blob: data: {res}",
        f"worker-src blob: {res}",
        f"style-src 'unsafe-inline' blob: data: {res}",
        f"img-src data: blob: {res}",
        f"font-src data: blob: {res}",
        f"media-src data: blob: {res}",
        f"connect-src {connect}",
        f"frame-src {frames}",
        "object-src 'none'",
        f"base-uri {base}",
        "form-action 'none'",
        "report-uri /csp-report",
    ]
    return "; ".join(p.strip() for p in parts)


def page_csp(sandbox_origin: str | None) -> str:
    """The chat page's own policy, with the sandbox origin allowed as a frame source."""
    if not sandbox_origin:
        return PAGE_CSP
    return PAGE_CSP.replace("frame-src 'self'", f"frame-src 'self' {sandbox_origin}")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """Where apps run for a given page address, and how to recognise a request for it."""

    origin: str | None  # SWITCHBOARD_SANDBOX_ORIGIN, normalised
    host: str  # the sandbox host name requests are matched on
    pages: tuple[Page, ...] = ()  # the page's own origins an app's CSP never admits

    @classmethod
    def from_settings(cls, settings: Settings) -> SandboxPolicy:
        pages = tuple(p for p in map(_page_of, [settings.public_url or "", *settings.allowed_origins]) if p)
        pages += (("127.0.0.1", settings.port),)
        configured = settings.sandbox_origin
        if not configured:
            return cls(None, LOCAL_SANDBOX_HOST, pages)
        parts = urlsplit(configured.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            raise ValueError(
                f"SWITCHBOARD_SANDBOX_ORIGIN must be an origin like https://sandbox.example.com, not {configured!r}"
            )
        return cls(f"{parts.scheme}://{parts.netloc.lower()}", parts.hostname.lower(), pages)

    def pages_for(self, page_origin: str, host_header: str) -> tuple[Page, ...]:
        """The page origins of one proxy request: the operator's, the one the page names, and
        every loopback name on the port the sandbox was reached on (the same listener)."""
        named = _page_of(page_origin)
        try:
            _, port = split_host(host_header)
        except ValueError:
            port = None
        return self.pages + ((named,) if named else ()) + ((("127.0.0.1", port),) if port else ())

    def origin_for(self, scheme: str, host_header: str) -> str | None:
        """The sandbox origin for a page served at `scheme://host_header`; None when apps cannot
        be isolated there (no sandbox origin configured and the page is not on a loopback name)."""
        if self.origin:
            return self.origin
        try:
            name, port = split_host(host_header)
        except ValueError:
            return None
        if name not in LOCAL_HOSTS:
            return None
        return f"{scheme}://{LOCAL_SANDBOX_HOST}" + (f":{port}" if port else "")

    def is_sandbox_request(self, host_header: str) -> bool:
        try:
            return split_host(host_header)[0] == self.host
        except ValueError:
            return False


def _page_of(origin: str) -> Page | None:
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80)


def _decode_csp(query: str) -> dict | None:
    raw = (parse_qs(query).get("csp") or [""])[0]
    if not raw or len(raw) > _MAX_CSP_PARAM:
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) and set(value) <= set(_CSP_KEYS) else None


class SandboxMiddleware:
    """Serves the sandbox host: `GET /proxy` (the proxy page under the app's CSP), `POST
    /csp-report` (violations, logged), 404 for anything else, a closed door for websockets."""

    def __init__(self, app: ASGIApp, policy: SandboxPolicy) -> None:
        self.app = app
        self.policy = policy
        self._html: bytes | None = None
        self._reports = CspReportLimiter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = Headers(scope=scope).getlist("host")
        if len(hosts) != 1 or not self.policy.is_sandbox_request(hosts[0]):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            message = await receive()
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": 1008})
            return
        path, method = scope.get("path", ""), scope["method"]
        if path == "/proxy" and method in ("GET", "HEAD"):
            await self._proxy(scope, send)
        elif path == "/csp-report" and method == "POST":
            await self._report(scope, receive, send)
        else:
            await _respond(send, 404, b"not found", [(b"content-type", b"text/plain")])

    async def _proxy(self, scope: Scope, send: Send) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        csp = _decode_csp(query)
        if csp is None and b"csp=" in scope.get("query_string", b""):
            await _respond(send, 400, b"bad csp parameter", [(b"content-type", b"text/plain")])
            return
        if self._html is None:
            self._html = _PROXY_HTML.read_bytes()
        page = (parse_qs(query).get("host") or [""])[0]
        pages = self.policy.pages_for(page, Headers(scope=scope).get("host", ""))
        headers = [
            (b"content-type", b"text/html; charset=utf-8"),
            (b"content-security-policy", app_csp(csp, pages).encode()),
            (b"cache-control", b"no-store"),
            (b"cross-origin-resource-policy", b"cross-origin"),
        ]
        await _respond(send, 200, self._html if scope["method"] == "GET" else b"", headers)

    async def _report(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Logs the report, within the limits of web/sandbox/csp_reports.py; 204 whether logged or not,
        429 (body unread) past the client's rate."""
        if dropped := self._reports.roll():
            log.warning(
                "%d CSP reports were dropped in the last minute (too many, repeated or too long)",
                dropped,
                extra={"event": "app_csp_reports_dropped", "total": dropped},
            )
        client = (scope.get("client") or ("unknown",))[0]
        if not self._reports.admit(client):
            await _respond(send, 429, b"", [(b"retry-after", b"60")])
            return
        body, more = b"", True
        while more and len(body) < 16384:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            report = json.loads(body or b"{}").get("csp-report", {})
        except (ValueError, AttributeError):
            report = {}
        if not isinstance(report, dict):
            report = {}
        directive = str(report.get("violated-directive") or report.get("effective-directive") or "")[:80]
        uri = str(report.get("blocked-uri") or "").split("?", 1)[0][:200]  # not what the app tried to send
        if self._reports.take(client, directive, uri):
            log.warning(
                "an app was refused by its CSP",
                extra={"event": "app_csp_violation", "directive": directive, "uri": uri},
            )
        await _respond(send, 204, b"", [])


async def _respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [
        *headers,
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-dns-prefetch-control", b"off"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
