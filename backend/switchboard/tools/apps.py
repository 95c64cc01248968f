"""MCP Apps (extension `io.modelcontextprotocol/ui`) on the server side: which tools are
app tools and who may see them, and the `ui://` resource of an app, read on the user's
session, checked (CSP origins, permissions) and cached.

A tool's `_meta.ui.resourceUri` (older servers: `_meta["ui/resourceUri"]`) names its app;
`_meta.ui.visibility` says who may call it (`model`, `app`; both when absent)."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import mcp_types

from ..errors import ToolError

__all__ = [
    "APP_MIME",
    "UI_EXTENSION",
    "AppResource",
    "AppResources",
    "app_fields",
    "check_csp",
    "features_of",
    "permissions_of",
]

log = logging.getLogger("switchboard.tools")

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
# the resource's name of a permission -> the operator's name of it in mcp.json (`app_permissions`), which
# is the Permissions-Policy feature the app's frames are given (`features_of`): the page and the sandbox
# proxy take the features from the server and keep no map of their own
PERMISSIONS = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboardWrite": "clipboard-write",
}
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
_VISIBILITY = ("model", "app")


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def app_fields(meta: Mapping[str, Any] | None) -> tuple[str | None, tuple[str, ...]]:
    """(the app's `ui://` resource URI or None, who may call the tool) from a tool's `_meta`."""
    meta = _as_dict(meta)
    ui = _as_dict(meta.get("ui"))
    uri = ui.get("resourceUri") or meta.get("ui/resourceUri")
    if not isinstance(uri, str) or not uri.startswith("ui://"):
        uri = None
    visibility = ui.get("visibility")
    if isinstance(visibility, list) and all(isinstance(v, str) for v in visibility):
        kept = tuple(v for v in _VISIBILITY if v in visibility)
    else:
        kept = _VISIBILITY
    return uri, kept


def _origin(entry: Any, *, sockets: bool) -> str | None:
    """`entry` as `scheme://host[:port]` when it is an origin the host accepts, else None:
    https (wss for connections), or http/ws on localhost (development). `*.` subdomain
    wildcards are allowed; paths, queries, credentials and other schemes are not."""
    if not isinstance(entry, str) or len(entry) > 300 or any(c.isspace() for c in entry):
        return None
    try:
        parts = urlsplit(entry)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    if parts.username or parts.password or parts.query or parts.fragment or parts.path not in ("", "/"):
        return None
    bare = host[2:] if host.startswith("*.") else host
    if not bare or "*" in bare or not all(c.isalnum() or c in ".-:[]" for c in bare):
        return None
    secure = {"https"} | ({"wss"} if sockets else set())
    local = {"http"} | ({"ws"} if sockets else set())
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    if parts.scheme in secure or (parts.scheme in local and shown in _LOCAL_HOSTS):
        return f"{parts.scheme}://{shown}" + (f":{port}" if port is not None else "")
    return None


def check_csp(declared: Any, *, server: str, uri: str) -> dict[str, list[str]]:
    """The resource's `_meta.ui.csp` with every entry that is not an origin dropped (and logged)."""
    declared = _as_dict(declared)
    out: dict[str, list[str]] = {}
    for key in CSP_KEYS:
        entries = declared.get(key)
        kept: list[str] = []
        for entry in entries if isinstance(entries, list) else []:
            origin = _origin(entry, sockets=key == "connectDomains")
            if origin is None:
                log.warning(
                    "app CSP entry dropped",
                    extra={
                        "event": "app_csp_dropped",
                        "server": server,
                        "uri": uri,
                        "directive": key,
                        "entry": str(entry)[:300],
                    },
                )
            elif origin not in kept:
                kept.append(origin)
        out[key] = kept
    return out


def permissions_of(declared: Any, allowed: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Permissions the resource declares AND the operator allows for its server."""
    declared = _as_dict(declared)
    return {name: {} for name, config_name in PERMISSIONS.items() if name in declared and config_name in allowed}


def features_of(permissions: Mapping[str, Any]) -> list[str]:
    """The Permissions-Policy features (`allow` of the app's frames) of granted permissions."""
    return [PERMISSIONS[name] for name in permissions if name in PERMISSIONS]


@dataclass(frozen=True, slots=True)
class AppResource:
    uri: str
    html: str
    csp: dict[str, list[str]]
    permissions_declared: dict[str, Any]
    prefers_border: bool | None
    digest: str  # of the HTML, the CSP and the declared permissions: what the pin compares


def _content_meta(item: Any) -> dict[str, Any]:
    return _as_dict(_as_dict(getattr(item, "meta", None)).get("ui"))


def parse_app_resource(
    server: str, uri: str, contents: Sequence[Any], listed: Sequence[Any], max_bytes: int
) -> AppResource:
    """The app from a `resources/read` answer; its `_meta.ui` from the content item, else from
    the `resources/list` entry (as the extension says)."""
    item = next((c for c in contents if str(getattr(c, "uri", "")) == uri), contents[0] if contents else None)
    if isinstance(item, mcp_types.TextResourceContents):
        html = item.text
    elif isinstance(item, mcp_types.BlobResourceContents):
        try:
            html = base64.b64decode(item.blob).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            raise ToolError(f"server '{server}': the app {uri} is not UTF-8 HTML") from None
    else:
        raise ToolError(f"server '{server}' returned no content for the app {uri}")
    if len(html.encode("utf-8")) > max_bytes:
        raise ToolError(f"server '{server}': the app {uri} is larger than {max_bytes // (1024 * 1024)} MB")
    mime = (item.mime_type or "").replace(" ", "").lower()
    if mime != APP_MIME:
        log.info(
            "app resource has MIME type %r", item.mime_type, extra={"event": "app_mime", "server": server, "uri": uri}
        )
    ui = _content_meta(item)
    if not ui:
        entry = next((r for r in listed if str(getattr(r, "uri", "")) == uri), None)
        ui = _content_meta(entry) if entry is not None else {}
    csp = check_csp(ui.get("csp"), server=server, uri=uri)
    declared: dict[str, dict[str, Any]] = {k: {} for k in PERMISSIONS if k in _as_dict(ui.get("permissions"))}
    border = ui.get("prefersBorder") if isinstance(ui.get("prefersBorder"), bool) else None
    canonical = json.dumps({"html": html, "csp": csp, "permissions": sorted(declared)}, sort_keys=True)
    return AppResource(uri, html, csp, declared, border, hashlib.sha256(canonical.encode()).hexdigest())


Reader = Callable[[], Awaitable[AppResource]]


@dataclass
class AppResources:
    """Apps read recently, by (server, user of a per-user session or None, uri); forgotten after
    `ttl_s` or when their server changes (reconnect, list_changed)."""

    ttl_s: float = 60.0
    _cache: dict[tuple[str, str | None, str], tuple[float, AppResource]] = field(default_factory=dict)

    async def get(self, server: str, user: str | None, uri: str, read: Reader) -> AppResource:
        key = (server, user, uri)
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        resource = await read()
        self._cache[key] = (now + self.ttl_s, resource)
        return resource

    def forget(self, server: str) -> None:
        for key in [k for k in self._cache if k[0] == server]:
            del self._cache[key]
