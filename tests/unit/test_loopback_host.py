"""One answer to "is this host this machine?": `serve`'s dev-mode warning and the sign-in
guard's dev-mode exception (`tools/oauth_guard.is_local_url`) both ask `is_loopback_host`."""

from __future__ import annotations

import pytest

from switchboard.settings import is_loopback_host
from switchboard.tools.oauth.url_guard import is_local_url


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "LOCALHOST",
        "ip6-localhost",
        "localhost.localdomain",
        "sandbox.localhost",
        "127.0.0.1",
        "127.8.9.10",
        "::1",
        "[::1]",
    ],
)
def test_names_and_addresses_of_this_machine_are_loopback(host):
    assert is_loopback_host(host)
    assert is_local_url(f"http://{host if ':' not in host or host.startswith('[') else f'[{host}]'}:8000/mcp")


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "example.com", "localhost.example.com", ""]
)
def test_other_hosts_are_not(host):
    assert not is_loopback_host(host)
