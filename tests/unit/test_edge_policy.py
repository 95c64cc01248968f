"""Which Host headers and Origins the app admits (web/security.py EdgePolicy)."""

from __future__ import annotations

import pytest

from switchboard.settings import Settings
from switchboard.web.security import EdgePolicy, split_host


def policy(**values) -> EdgePolicy:
    return EdgePolicy.from_settings(Settings(_env_file=None, **values))  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Example.COM:8000", ("example.com", 8000)),
        ("localhost", ("localhost", None)),
        ("[::1]:8000", ("::1", 8000)),
        ("[::1]", ("::1", None)),
        ("localhost.:80", ("localhost", 80)),
    ],
)
def test_split_host(value, expected):
    assert split_host(value) == expected


@pytest.mark.parametrize("value", ["", ":80", "a:b", "[::1", "[::1]x", "evil.example/x", "user@host", "a b"])
def test_split_host_refuses_malformed_values(value):
    with pytest.raises(ValueError):
        split_host(value)


def test_by_default_only_loopback_names_are_hosts():
    default = policy()
    for host in ("localhost", "localhost:8000", "127.0.0.1:1234", "[::1]:8000", "LOCALHOST"):
        assert default.host_allowed(host), host
    for host in ("0.0.0.0:8000", "192.168.1.5:8000", "rebind.example", "localhost.evil.example", "", "[::2]"):
        assert not default.host_allowed(host), host


def test_public_url_and_allowed_hosts_add_names():
    configured = policy(public_url="https://chat.example.com/base", allowed_hosts=["box.lan:8000", "*.corp.example"])
    assert configured.host_allowed("chat.example.com")
    assert configured.host_allowed("box.lan:9000")  # entries are names, any port
    assert configured.host_allowed("a.b.corp.example")
    assert not configured.host_allowed("corp.example")
    assert not configured.host_allowed("xcorp.example")
    assert policy(allowed_hosts=["*"]).host_allowed("anything.example")


def test_origins_are_the_public_origin_and_the_known_names_on_the_apps_port():
    configured = policy(
        port=8000,
        public_url="https://chat.example.com",
        allowed_hosts=["box.lan", "*.corp.example"],
        allowed_origins=["https://front.example.org:8443"],
    )
    for origin in (
        "https://chat.example.com",
        "https://chat.example.com:443",
        "https://front.example.org:8443",
        "http://localhost:8000",
        "http://127.0.0.1:8000",
        "http://[::1]:8000",
        "http://box.lan:8000",
    ):
        assert configured.origin_allowed(origin), origin
    for origin in (
        "http://chat.example.com",
        "https://front.example.org",
        "http://localhost:3000",
        "http://a.corp.example:8000",
        "null",
        "file://",
        "ftp://localhost:8000",
        "http://evil.example:8000",
    ):
        assert not configured.origin_allowed(origin), origin
    # The port the request really arrived on counts as the app's own (serve --port, tests).
    assert configured.origin_allowed("http://localhost:5123", server_port=5123)
    # Same origin as the request, through a proxy on another port that passes Host on.
    assert configured.origin_allowed("http://127.0.0.1:9090", "127.0.0.1:9090", server_port=8000)
    assert configured.origin_allowed("https://box.lan", "box.lan")
    assert not configured.origin_allowed("http://localhost:3000", "localhost:8000")  # another local app's page
    assert not configured.origin_allowed("http://a.corp.example:9090", "a.corp.example:9090")  # wildcard names: never
    assert not policy(allowed_hosts=["*"]).origin_allowed("http://rebind.example:8000", "rebind.example:8000")
    assert policy(allowed_origins=["*"]).origin_allowed("null")


@pytest.mark.parametrize(
    ("values", "setting"),
    [
        ({"public_url": "chat.example.com"}, "SWITCHBOARD_PUBLIC_URL"),
        ({"allowed_hosts": ["http://chat.example.com/"]}, "SWITCHBOARD_ALLOWED_HOSTS"),
        ({"allowed_hosts": [""]}, "SWITCHBOARD_ALLOWED_HOSTS"),
        ({"allowed_origins": ["front.example.org"]}, "SWITCHBOARD_ALLOWED_ORIGINS"),
    ],
)
def test_a_malformed_setting_is_a_clear_error(values, setting):
    with pytest.raises(ValueError, match=setting):
        policy(**values)
