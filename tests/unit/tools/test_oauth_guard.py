"""The endpoint policy of OAuth sign-ins: which URLs a remote server's sign-in may make the host
request.  Names are resolved by an injected resolver (no network); every address counts."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp.shared._httpx_utils import RedirectAwareAuth  # the base of the SDK's providers

from switchboard.config.models import ServerConfig
from switchboard.errors import SignInFailed
from switchboard.tools.diagnostics import HttpTrace, http_client_factory
from switchboard.tools.oauth.flow import SignIns
from switchboard.tools.oauth.url_guard import POLICY_KEY, EndpointPolicy, GuardedAuth, PinnedTransport
from switchboard.tools.oauth.vault import MemoryVault


def resolver(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError("no such host")
        return table[host]

    return resolve


NAMES = resolver(
    {
        "auth.example.com": ["93.184.216.34"],
        "rebound.example.com": ["93.184.216.34", "10.1.2.3"],  # one public, one private: refused
        "v6.example.com": ["2606:2800:220:1:248:1893:25c8:1946"],
        "metadata.internal": ["169.254.169.254"],
    }
)


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/token",
        "https://127.8.9.10:8443/x",
        "https://[::1]/x",
        "https://10.0.0.1/x",
        "https://172.16.5.4/x",
        "https://192.168.1.1/x",
        "https://169.254.169.254/latest/meta-data",
        "https://[fe80::1]/x",
        "https://[fc00::1]/x",
        "https://[::ffff:127.0.0.1]/x",
        "https://0.0.0.0/x",
        "https://100.64.0.1/x",
        "https://rebound.example.com/token",
        "https://metadata.internal/x",
    ],
)
async def test_private_loopback_and_link_local_addresses_are_refused(url):
    policy = EndpointPolicy("s", resolve=NAMES)
    with pytest.raises(SignInFailed, match="loopback, link-local or private") as refused:
        await policy.check(url)
    assert "allow_private_endpoints" in refused.value.message


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "gopher://auth.example.com/x",
        "ftp://auth.example.com/x",
        "https:///nohost",
        "javascript:alert(1)",
    ],
)
async def test_only_http_and_https_urls(url):
    with pytest.raises(SignInFailed, match="not an http"):
        await EndpointPolicy("s", resolve=NAMES, allow_private=True, allow_http=True).check(url)


async def test_public_https_passes_and_plain_http_only_in_dev():
    strict = EndpointPolicy("s", resolve=NAMES)
    await strict.check("https://auth.example.com/token")
    await strict.check("https://v6.example.com/token")
    with pytest.raises(SignInFailed, match="plain http"):
        await strict.check("http://auth.example.com/token")
    await EndpointPolicy("s", resolve=NAMES, allow_http=True).check("http://auth.example.com/token")


async def test_an_unknown_host_is_refused_with_words():
    with pytest.raises(SignInFailed, match="could not be found"):
        await EndpointPolicy("s", resolve=NAMES).check("https://nowhere.example.com/x")


async def test_allowed_private_endpoints_and_the_servers_own_origin():
    await EndpointPolicy("s", resolve=NAMES, allow_private=True).check("http://10.0.0.1:8080/token")
    own = EndpointPolicy("s", own_origin="http://127.0.0.1:9000", resolve=NAMES)
    await own.check("http://127.0.0.1:9000/.well-known/oauth-authorization-server")  # the operator chose it
    with pytest.raises(SignInFailed):
        await own.check("http://127.0.0.1:9001/token")  # another port is another service


def test_dev_mode_allows_private_endpoints_only_for_a_server_on_localhost():
    def policy(url: str, dev: bool, **auth) -> EndpointPolicy:
        config = ServerConfig(url=url, auth={"type": "oauth", **auth})
        return SignIns(MemoryVault(), "http://127.0.0.1:8000/oauth/callback", dev=dev).policy("s", config)

    assert policy("http://localhost:3000/mcp", dev=True).allow_private
    assert policy("http://127.0.0.1:3000/mcp", dev=True).allow_private
    assert not policy("https://mcp.example.com/mcp", dev=True).allow_private
    assert not policy("http://localhost:3000/mcp", dev=False).allow_private
    assert policy("https://mcp.example.com/mcp", dev=False, allow_private_endpoints=True).allow_private
    assert policy("http://localhost:3000/mcp", dev=True).allow_http and not policy("http://x/mcp", dev=False).allow_http


def test_a_user_servers_sign_in_checks_its_own_origin_unless_the_operator_allowed_its_host():
    """A configured server's own origin is the operator's choice; a user's server's is the user's,
    so its sign-in checks (and pins) it too, unless its host is in SWITCHBOARD_USER_SERVER_HOSTS."""

    async def private(host: str, port: int) -> list[str]:
        return ["10.0.0.5"]

    def screened(guard: str) -> object:
        config = ServerConfig(url="https://mcp.corp.example/mcp", auth={"type": "oauth"}, guard_requests=guard)
        policy = SignIns(MemoryVault(), "https://sb.example/oauth/callback").policy("s", config)
        policy.resolve = private
        return asyncio.run(policy.screen("https://mcp.corp.example/.well-known/oauth-protected-resource"))

    assert screened("none") is None and screened("others") is None
    assert "private network" in getattr(screened("all"), "why", "")


# -- the check and the connection use one address ------------------------------------------


class _Http:
    """A tiny real HTTP server on 127.0.0.1 that counts requests and answers `reply`."""

    def __init__(self, reply: bytes = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}") -> None:
        self.reply, self.hits = reply, 0

    async def __aenter__(self) -> _Http:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.hits += 1
        writer.write(self.reply.replace(b"PORT", str(self.port).encode()))
        await writer.drain()
        writer.close()


class _Flow(httpx2.Auth):
    """The shape of the SDK's provider: one discovery request, then the request it authenticates."""

    def __init__(self, discovery: str) -> None:
        self.discovery = discovery

    async def _auth_flow(self, request):
        yield httpx2.Request("GET", self.discovery)
        yield request

    async def async_auth_flow(self, request):
        flow = self._auth_flow(request)
        response = await flow.__anext__()
        while True:
            try:
                response = await flow.asend((yield response))
            except StopAsyncIteration:
                return


class _Guarded(GuardedAuth, _Flow):
    def __init__(self, discovery: str, policy: EndpointPolicy) -> None:
        super().__init__(discovery)
        self.policy = policy


def _session_client(auth: httpx2.Auth) -> httpx2.AsyncClient:
    return http_client_factory(HttpTrace())(auth=auth)  # what a user's MCP session uses


async def test_a_name_that_rebinds_after_the_check_cannot_move_the_connection():
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])  # public to the first look, loopback after

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers)

    async with _Http() as internal, _Http() as server:
        policy = EndpointPolicy("evil", allow_http=True, resolve=rebinding)
        auth = _Guarded(f"http://localhost:{internal.port}/latest/meta-data", policy)
        async with _session_client(auth) as client:
            with pytest.raises(SignInFailed, match="loopback, link-local or private"):
                await client.get(f"http://127.0.0.1:{server.port}/mcp")
    assert internal.hits == 0  # unpinned, the connection resolved `localhost` again and got here


async def test_a_redirect_the_sdk_follows_within_an_origin_is_marked_for_pinning_too():
    class Follows(GuardedAuth, RedirectAwareAuth):  # the SDK provider's shape
        policy = EndpointPolicy("s", resolve=NAMES)

        async def _auth_flow(self, request):
            yield httpx2.Request("GET", "https://auth.example.com/.well-known/oauth-authorization-server")
            yield request

    original = httpx2.Request("POST", "https://mcp.example.com/mcp")
    flow = Follows().async_auth_flow(original)
    discovery = await flow.__anext__()
    moved = httpx2.Response(307, headers={"location": "/elsewhere"}, request=discovery)
    moved.next_request = httpx2.Request("GET", "https://auth.example.com/elsewhere")  # as the client builds it
    follow = await flow.asend(moved)
    assert str(follow.url) == "https://auth.example.com/elsewhere"
    assert discovery.extensions[POLICY_KEY] is Follows.policy and follow.extensions[POLICY_KEY] is Follows.policy
    last = await flow.asend(httpx2.Response(200, json={}, request=follow))
    assert last is original and POLICY_KEY not in last.extensions  # the MCP request itself: the operator's URL


async def test_a_pinned_request_keeps_its_name_for_the_host_header_and_tls():
    sent: list[httpx2.Request] = []

    class Capture(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request):
            sent.append(request)
            return httpx2.Response(200)

    policy = EndpointPolicy("s", resolve=NAMES)
    request = httpx2.Request("GET", "https://auth.example.com/token", extensions={POLICY_KEY: policy})
    await PinnedTransport(Capture()).handle_async_request(request)
    assert str(sent[0].url) == "https://93.184.216.34/token"
    assert sent[0].headers["host"] == "auth.example.com"
    assert sent[0].extensions["sni_hostname"] == "auth.example.com" and POLICY_KEY not in sent[0].extensions
    plain = httpx2.Request("GET", "https://anything.example.com/mcp")  # not a sign-in request: untouched
    await PinnedTransport(Capture()).handle_async_request(plain)
    assert sent[1] is plain
