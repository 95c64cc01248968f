"""Where a sign-in may send the host: a check on every URL an OAuth flow makes the host
request (protected-resource and authorization-server metadata, registration, token), and
the translation of the SDK's flow errors into words that never carry a remote answer.

A remote MCP server chooses these URLs (its 401 names its metadata, its metadata names
the endpoints), so without the check a server could make the host GET and POST anywhere
its own network reaches: 127.0.0.1, the cloud metadata address, the office LAN.  Refused:
non-http(s) schemes; hosts that resolve to any loopback, link-local, private or otherwise
non-public address (every address is checked); plain http to a public address outside dev
mode.  Allowed anyway: the origin of the server's own configured URL (the operator chose
it), and everything when the operator says so per server (`auth.allow_private_endpoints`,
or dev mode for a server whose own URL is on localhost).

The check and the connection use the same address (`PinnedTransport`): a name that answers
a public address to the check and a private one a moment later (DNS rebinding) cannot move
the connection, and a redirect is checked like the request that led to it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

from ...errors import SignInFailed
from ...settings import is_loopback_host

__all__ = [
    "POLICY_KEY",
    "EndpointPolicy",
    "GuardedAuth",
    "PinnedTransport",
    "Refusal",
    "is_public_address",
    "origin_of",
    "pinned_transport",
    "resolve_host",
    "sign_in_failure",
]

log = logging.getLogger("switchboard.tools")

Resolve = Callable[[str, int], Awaitable[list[str]]]
EXCERPT_CHARS = 200  # how much of a refused answer the administrators' log keeps
POLICY_KEY = "switchboard_sign_in"  # the request extension that marks a sign-in flow's request


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def is_local_url(url: str) -> bool:
    """Whether the URL's host is this machine (a name for it, or a loopback address)."""
    return is_loopback_host(urlsplit(url).hostname or "")


async def resolve_host(host: str, port: int) -> list[str]:
    """The policy's DNS lookup: the addresses it checks are the ones connected to (no second lookup)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def _resolve(host: str, port: int) -> list[str]:
    return await resolve_host(host, port)  # looked up when called: the one place a test stands in for DNS


def is_public_address(address: str) -> bool:
    """Whether an IP address is on the public internet (not loopback, link-local, private, multicast)."""
    return _public(address)


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


@dataclass(frozen=True)
class Refusal:
    """Why a URL may not be requested: `where` is its scheme and host, `why` the reason."""

    where: str
    why: str
    hint: str = ""
    unknown_host: bool = False


@dataclass
class EndpointPolicy:
    """The rule for one server's sign-in requests."""

    server: str
    own_origin: str | None = None  # the configured server URL's origin: always allowed
    allow_private: bool = False
    allow_http: bool = False  # dev mode
    resolve: Resolve = _resolve
    what: str = "sign-in"  # what a refusal stops: a sign-in, or a user's server's "connection"

    async def check(self, url: str) -> str | None:
        """Raise SignInFailed when the host must not request `url` for this server's sign-in.
        Returns the address checked, to connect to (None: the server's own origin, not checked)."""
        found = await self.screen(url)
        if isinstance(found, Refusal):
            if found.unknown_host:
                raise SignInFailed(
                    f"server '{self.server}': its sign-in names {found.where}, whose host could not be found",
                    action="Ask your administrator to check the server's sign-in set-up.",
                )
            self._refuse(found.where, found.why, found.hint)
        return found

    async def screen(self, url: str) -> str | Refusal | None:
        """The rule without its consequence: the address to connect to, None for the server's
        own origin (not checked), or why the host may not request `url`."""
        parts = urlsplit(url)
        where = f"{parts.scheme}://{parts.netloc}" if parts.netloc else url[:80]
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return Refusal(where, "it is not an http(s) address")
        if self.own_origin is not None and origin_of(url) == self.own_origin:
            return None
        host = parts.hostname.strip("[]")
        try:
            addresses = [host] if _is_ip(host) else await self.resolve(host, parts.port or 443)
        except OSError:
            return Refusal(where, "its host could not be found", unknown_host=True)
        if not addresses:
            return Refusal(where, "its host has no address")
        private = [a for a in addresses if not _public(a)]
        if private and not self.allow_private:
            return Refusal(
                where,
                "it is on a loopback, link-local or private network address",
                hint="if this server is yours, your administrator can allow it with "
                '"allow_private_endpoints": true in its "auth" in mcp.json',
            )
        if parts.scheme == "http" and not self.allow_http and not private:
            return Refusal(where, "it is plain http (sign-in needs https)")
        return addresses[0]

    def _refuse(self, where: str, why: str, hint: str = "") -> NoReturn:
        log.warning(
            "server %s: refused a sign-in request to %s: %s",
            self.server,
            where,
            why,
            extra={"event": "oauth_endpoint_refused", "server": self.server, "origin": where},
        )
        raise SignInFailed(
            f"server '{self.server}': the {self.what} was stopped because it would make this host "
            f"contact {where}, and {why}" + (f"; {hint}" if hint and self.what == "sign-in" else ""),
            action="Ask your administrator to check the server's sign-in set-up.",
        )


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def sign_in_failure(server: str, exc: BaseException, response: httpx2.Response | None) -> SignInFailed:
    """The SDK's flow errors as words for the user.  Their text can quote the remote answer
    (a token or registration error's body), so that goes to the administrators' log only,
    cut short; the user learns which step failed and the HTTP status."""
    status = f" (HTTP {response.status_code}{_error_code(response)})" if response is not None else ""
    if isinstance(exc, OAuthTokenError):
        what = f"the authorization server refused to give a token{status}"
    elif isinstance(exc, OAuthRegistrationError):
        what = f"the authorization server refused to register this host as a client{status}"
    elif isinstance(exc, OAuthFlowError):
        what = f"the sign-in did not check out{status}"
    else:
        what = f"the sign-in failed{status}"
    excerpt = str(exc).replace("\n", " ")[:EXCERPT_CHARS]
    log.warning(
        "server %s: %s: %s",
        server,
        what,
        excerpt,
        extra={"event": "oauth_flow_failed", "server": server, "why": type(exc).__name__},
    )
    return SignInFailed(
        f"server '{server}': {what}; the details are in the host's log",
        action="Try again later; if it keeps failing, ask your administrator.",
    )


def _error_code(response: httpx2.Response) -> str:
    """The OAuth `error` code of an error answer (RFC 6749 5.2: e.g. invalid_client), when it is
    one: a short code from a fixed vocabulary, unlike the rest of the body."""
    try:
        code = response.json().get("error")
    except (ValueError, AttributeError, httpx2.ResponseNotRead):
        return ""
    return f", {code}" if isinstance(code, str) and re.fullmatch(r"[a-z_]{1,40}", code) else ""


class GuardedAuth:
    """Mixed into the SDK's OAuth providers (before them): every request the flow makes,
    other than the MCP request it authenticates, passes `policy`; flow errors are translated."""

    policy: EndpointPolicy

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)  # type: ignore[misc]
        response: httpx2.Response | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    await self.policy.check(str(outgoing.url))  # early, in the flow's words
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except (OAuthFlowError, OAuthTokenError, OAuthRegistrationError) as exc:
            raise sign_in_failure(self.policy.server, exc, _failed(response)) from None
        finally:
            await flow.aclose()

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Marks every request of the flow for `PinnedTransport`, the redirects the SDK follows
        within an origin included (they never pass through `_auth_flow`)."""
        flow = super().async_auth_flow(request)  # type: ignore[misc]
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    outgoing.extensions = {**outgoing.extensions, POLICY_KEY: self.policy}
                outgoing = await flow.asend((yield outgoing))
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


def _failed(response: Any) -> httpx2.Response | None:
    return response if isinstance(response, httpx2.Response) and response.status_code >= 400 else None


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends a sign-in flow's request (marked by `GuardedAuth`, redirects keep the mark) to the
    very address its policy checked: the URL's host becomes that address, while the Host header
    and the TLS server name (certificate check included) stay the name.  Other requests pass."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        policy = request.extensions.get(POLICY_KEY)
        if isinstance(policy, EndpointPolicy):
            address = await policy.check(str(request.url))
            extensions = {k: v for k, v in request.extensions.items() if k != POLICY_KEY}
            if address is not None and not _is_ip(request.url.host):
                if request.url.scheme == "https":
                    extensions["sni_hostname"] = request.url.host
                request = httpx2.Request(
                    request.method,
                    request.url.copy_with(host=address),
                    headers=request.headers,
                    stream=request.stream,
                    extensions=extensions,
                )
            else:
                request.extensions = extensions
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def pinned_transport() -> PinnedTransport:
    return PinnedTransport(httpx2.AsyncHTTPTransport())
