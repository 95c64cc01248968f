"""A user's own server and the network: a server whose TLS certificate is not trusted is refused
with words that name TLS and nothing is stored; a name that resolves to a public address for the
endpoint policy's check and to 127.0.0.1 for any later lookup (DNS rebinding) is connected to only
at the address the check pinned, never at the local server."""

from __future__ import annotations

import datetime
import ipaddress
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
