"""A user's own server and the network: a server whose TLS certificate is not trusted is refused
with words that name TLS and nothing is stored; a name that resolves to a public address for the
endpoint policy's check and to 127.0.0.1 for any later lookup (DNS rebinding) is connected to only
at the address the check pinned, never at the local server."""

from __future__ import annotations

import asyncio
import asyncio.base_events
import datetime
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastmcp import FastMCP

from switchboard.tools.oauth import url_guard as oauth_guard
from tests.support.harness import free_port, make_settings, running_app, write_config

SECRET = "user-server-network-secret"
ALICE = {"x-user-email": "alice@example.com", "x-proxy-secret": SECRET}

pytestmark = pytest.mark.timeout(240)  # each starts the app and a real server; the machine is shared


def _site(tmp_path, **settings):
    write_config(tmp_path / "defaults", groups={"*@example.com": ["users"]})
    values = {"auth_mode": "proxy", "proxy_secret": SECRET, "user_server_hosts": ["127.0.0.1"], **settings}
    return running_app(make_settings(tmp_path, **values))


def _mine(client) -> list[dict]:
    answer = client.get("/api/servers", headers=ALICE)
    assert answer.status_code == 200, answer.text
    return answer.json()["servers"]


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no authority signed (its own key signs it)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


def _mcp_app():
    mcp = FastMCP("plain")

    @mcp.tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return mcp.http_app(transport="http")


@contextmanager
def _serve(app, port: int, **tls: str) -> Iterator[None]:
    """A real MCP server over streamable HTTP on 127.0.0.1 (HTTPS when given a certificate)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **tls))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(10)


def test_a_server_whose_certificate_is_not_trusted_is_refused_naming_tls(tmp_path):
    cert, key = _self_signed(tmp_path)
    port = free_port()
    with (
        _serve(_mcp_app(), port, ssl_certfile=str(cert), ssl_keyfile=str(key)),
        _site(tmp_path) as (client, services),
    ):
        answer = client.post(
            "/api/servers", json={"name": "tls", "url": f"https://127.0.0.1:{port}/mcp"}, headers=ALICE
        )
        assert answer.status_code == 400, answer.text
        message = answer.json()["error"]["message"]
        assert "TLS" in message and "certificate not trusted: self-signed certificate" in message, message
        assert _mine(client) == []
        assert not any(name.startswith("tls.") for name in services.pool.mcp.servers)


PUBLIC = "93.184.215.14"  # what `rebind.example` answers the endpoint policy's check


def test_a_name_that_rebinds_to_127_0_0_1_is_connected_to_only_at_the_address_checked(tmp_path, monkeypatch):
    """DNS rebinding: `rebind.example` answers a public address to the endpoint policy's lookup and
    127.0.0.1, where a real MCP server listens, to any lookup after it. The connection goes to the
    address the check pinned (which refuses here, standing for the outside world) and the local
    server never hears of it; were the connection to look the name up again, it would reach the
    local server and the server would be added."""
    real_resolve = oauth_guard.resolve_host
    real_lookup, real_lookup_sync = asyncio.base_events.BaseEventLoop.getaddrinfo, socket.getaddrinfo
    real_connect = asyncio.base_events.BaseEventLoop.create_connection
    later: list[str] = []  # lookups of the name after the check
    dialled: list[tuple[str, int]] = []

    async def checked(host, port):
        return [PUBLIC] if host == "rebind.example" else await real_resolve(host, port)

    def rebound(host, port):
        later.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", int(port)))]

    def rebinds(host) -> bool:  # anyio asks with the name IDNA-encoded, as bytes
        return (host.decode() if isinstance(host, bytes) else host) == "rebind.example"

    async def lookup(self, host, port, *args, **kwargs):
        return rebound(host, port) if rebinds(host) else await real_lookup(self, host, port, *args, **kwargs)

    def lookup_sync(host, port, *args, **kwargs):
        return rebound(host, port) if rebinds(host) else real_lookup_sync(host, port, *args, **kwargs)

    async def connect(self, factory, host=None, port=None, *args, **kwargs):
        dialled.append((host, port))
        if host == PUBLIC:
            raise ConnectionRefusedError(111, "refused (the test's stand-in for the outside world)")
        return await real_connect(self, factory, host, port, *args, **kwargs)

    heard: list[str] = []
    app = _mcp_app()

    async def counted(scope, receive, send):
        if scope["type"] == "http":
            heard.append(scope["path"])
        await app(scope, receive, send)

    port = free_port()
    with _serve(counted, port), _site(tmp_path, user_server_hosts=[]) as (client, services):
        monkeypatch.setattr(oauth_guard, "resolve_host", checked)
        monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "getaddrinfo", lookup)
        monkeypatch.setattr(socket, "getaddrinfo", lookup_sync)
        monkeypatch.setattr(asyncio.base_events.BaseEventLoop, "create_connection", connect)
        url = f"http://rebind.example:{port}/mcp"
        answer = client.post("/api/servers", json={"name": "moved", "url": url}, headers=ALICE)
        monkeypatch.undo()
        assert answer.status_code == 400, answer.text
        assert "could not connect" in answer.json()["error"]["message"], answer.text
        assert heard == [], "the local server was reached"
        assert later == [], "the name was looked up again after the check"
        assert (PUBLIC, port) in dialled and ("127.0.0.1", port) not in dialled, dialled
        assert _mine(client) == [] and not any(name.startswith("moved.") for name in services.pool.mcp.servers)
