"""Why a connection to an MCP server failed, in words an operator can act on.

The MCP SDK and fastmcp wrap what really happened several times (task groups,
`RuntimeError("Client failed to connect")`, a JSON-RPC error standing in for an
HTTP status), so the reason is found by walking the whole exception chain for
the library's typed exceptions (the SDK's vendored `httpx2`, `ssl`, timeouts),
plus what the HTTP client itself saw on the wire (`HttpTrace`): the SDK turns
an HTTP 401 into "Server returned an error response" and drops the status.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

from mcp import MCPError

from ..errors import ConfigError, SignInFailed
from .oauth.url_guard import pinned_transport
from .servers.stdio import ServerExited, last_lines, stderr_tail

__all__ = ["HttpTrace", "caused_by", "describe_failure", "http_client_factory"]


@dataclass
class HttpTrace:
    """The last HTTP error answer a server gave on one connection attempt."""

    status: int | None = None
    www_authenticate: str | None = None
    # The transport error's chain as it was raised: re-raising the same object inside the
    # SDK's task groups overwrites its __context__ (the ssl error behind a ConnectError is lost).
    errors: tuple[BaseException, ...] = ()

    def reset(self) -> None:
        self.status, self.www_authenticate, self.errors = None, None, ()

    async def on_response(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.status = response.status_code
            self.www_authenticate = response.headers.get("www-authenticate")


class _TracingTransport(httpx2.AsyncBaseTransport):
    """Keeps the transport error with its whole chain (the SDK drops the ssl error's context)."""

    def __init__(self, trace: HttpTrace, inner: httpx2.AsyncBaseTransport) -> None:
        self._trace, self._inner = trace, inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            self._trace.errors = tuple(_chain(exc))
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client_factory(trace: HttpTrace) -> Any:
    """An httpx2 client factory (the MCP transports' signature) that reports answers to `trace`."""

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
        **kwargs: Any,
    ) -> httpx2.AsyncClient:
        kwargs.setdefault("follow_redirects", True)
        return httpx2.AsyncClient(
            headers=headers,
            auth=auth,
            timeout=timeout or httpx2.Timeout(30.0, read=300.0),
            event_hooks={"response": [trace.on_response]},
            transport=_TracingTransport(trace, pinned_transport()),
            **kwargs,
        )

    return factory


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """Every exception reachable from `exc`: causes, contexts, group members and wrapped arguments."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
        # httpcore2 wraps the ssl error as its argument: ConnectError(SSLError(...))
        todo.extend(arg for arg in current.args if isinstance(arg, BaseException))


def _http_status(status: int, url: str) -> str:
    where = f"{url} " if url else "the server "
    if status == 401:
        return f"{where}answered HTTP 401: needs sign-in (a missing, expired or wrong credential)"
    if status == 403:
        return f"{where}answered HTTP 403: the credential is not allowed to use this server"
    if status == 404:
        return f"{where}answered HTTP 404: check the URL's path"
    return f"{where}answered HTTP {status}"


def _first(exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]) -> Any:
    return next((e for e in _chain(exc) if isinstance(e, kind)), None)


def caused_by(exc: BaseException, kind: type[BaseException] | tuple[type[BaseException], ...]) -> Any:
    """The first exception of `kind` anywhere in `exc`'s chain (through task groups and wrappers), or None."""
    return _first(exc, kind)


def describe_failure(
    exc: BaseException, *, url: str = "", trace: HttpTrace | None = None, timeout_s: float | None = None
) -> str:
    """Words for a failed connection or call, from exception types and the HTTP trace."""
    if trace is not None and trace.errors and isinstance(exc, Exception):
        exc = ExceptionGroup("connection attempt", [exc, *(e for e in trace.errors if isinstance(e, Exception))])
    if (ours := _first(exc, (ConfigError, SignInFailed))) is not None:
        return str(ours.message)  # a sign-in failure in the host's words (oauth_guard), never the remote answer
    if _first(exc, (OAuthTokenError, OAuthRegistrationError)) is not None:
        return "the authorization server refused this host's client; the details are in the host's log"
    if _first(exc, OAuthFlowError) is not None:
        return f"OAuth sign-in to {url or 'the server'} failed; the details are in the host's log"
    if (status_error := _first(exc, httpx2.HTTPStatusError)) is not None:
        return _http_status(status_error.response.status_code, url)
    if trace is not None and trace.status is not None:
        return _http_status(trace.status, url)
    if (cert := _first(exc, ssl.SSLCertVerificationError)) is not None:  # e.g. self-signed, expired, another name
        why = cert.verify_message or cert.reason or "it did not verify"
        return f"TLS failed talking to {url or 'the server'}: certificate not trusted: {why}"
    if (tls := _first(exc, ssl.SSLError)) is not None:
        return f"TLS error talking to {url or 'the server'}: {tls} (is the scheme right, http or https?)"
    if (connect := _first(exc, httpx2.ConnectError)) is not None:
        return f"could not connect to {url or 'the server'}: {connect}"
    if _first(exc, (TimeoutError, asyncio.TimeoutError, httpx2.TimeoutException)) is not None:
        within = f" within {timeout_s:g} s" if timeout_s else ""
        return f"timed out: the server did not finish the MCP handshake{within}"
    if (http := _first(exc, httpx2.HTTPError)) is not None:
        return f"HTTP error: {http}"
    if (exited := _first(exc, ServerExited)) is not None:
        how = f"was killed by signal {-exited.code}" if exited.code < 0 else f"exited with code {exited.code}"
        said = last_lines(stderr_tail(Path(exited.log_file)))
        said = f"; its stderr ends: {said}" if said else "; it wrote nothing to stderr"
        return f"the server process {how}{said} (whole log: {exited.log_file})"
    if (mcp := _first(exc, MCPError)) is not None:
        if mcp.code == mcp_types.CONNECTION_CLOSED:
            return "the server closed the connection (for a local server: the process exited; see its stderr)"
        return f"MCP error {mcp.code}: {mcp.message}"
    if (os_error := _first(exc, OSError)) is not None:
        return f"could not start: {os_error}"
    return f"{type(exc).__name__}: {exc}"
