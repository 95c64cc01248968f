"""The endpoint policy of OAuth sign-ins: which URLs a remote server's sign-in may make the host
request.  Names are resolved by an injected resolver (no network); every address counts."""

from __future__ import annotations

import pytest

from switchboard.config.models import ServerConfig
from switchboard.errors import SignInFailed
from switchboard.tools.oauth import SignIns
from switchboard.tools.oauth_guard import EndpointPolicy
from switchboard.tools.vault import MemoryVault


def resolver(table: dict[str, list[str]]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError("no such host")
        return table[host]

    return resolve


NAMES = resolver({
    "auth.example.com": ["93.184.216.34"],
    "rebound.example.com": ["93.184.216.34", "10.1.2.3"],  # one public, one private: refused
    "v6.example.com": ["2606:2800:220:1:248:1893:25c8:1946"],
    "metadata.internal": ["169.254.169.254"],
})  # fmt: skip


@pytest.mark.parametrize("url", [
    "https://127.0.0.1/token", "https://127.8.9.10:8443/x", "https://[::1]/x", "https://10.0.0.1/x",
    "https://172.16.5.4/x", "https://192.168.1.1/x", "https://169.254.169.254/latest/meta-data",
    "https://[fe80::1]/x", "https://[fc00::1]/x", "https://[::ffff:127.0.0.1]/x", "https://0.0.0.0/x",
    "https://100.64.0.1/x", "https://rebound.example.com/token", "https://metadata.internal/x",
])  # fmt: skip
async def test_private_loopback_and_link_local_addresses_are_refused(url):
    policy = EndpointPolicy("s", resolve=NAMES)
    with pytest.raises(SignInFailed, match="loopback, link-local or private") as refused:
        await policy.check(url)
    assert "allow_private_endpoints" in refused.value.message


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://auth.example.com/x", "ftp://auth.example.com/x",
                                 "https:///nohost", "javascript:alert(1)"])  # fmt: skip
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
