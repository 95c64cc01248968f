"""A remote server that cannot be used says why, in words an operator can act on:
each case is a real local socket (refusing, answering 401, speaking plain HTTP to
an https URL, or never answering) reached through the app's own connection."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from switchboard.config.models import ServerConfig
from switchboard.tools import ServerConnection


class _Unauthorized(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def unauthorized_port() -> Iterator[int]:
    server = HTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_port() -> Iterator[int]:
    with socket.socket() as sock:  # accepts connections (backlog) and never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


async def _reason(tmp_path, url: str, init_timeout_s: float = 10.0) -> str:
    conn = ServerConnection(
        "remote", ServerConfig(url=url), project_root=tmp_path, log_dir=tmp_path, init_timeout_s=init_timeout_s
    )
    conn.start()
    try:
        for _ in range(400):
            if conn.status.status != "starting":
                break
            await asyncio.sleep(0.05)
        assert conn.status.status == "failed", conn.status
        return conn.status.reason or ""
    finally:
        await conn.stop()


async def test_refused_connection_says_could_not_connect(tmp_path, closed_port):
    url = f"http://127.0.0.1:{closed_port}/mcp"
    assert (await _reason(tmp_path, url)).startswith(f"could not connect to {url}")


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
async def test_http_401_says_needs_sign_in(tmp_path, unauthorized_port, path):
    url = f"http://127.0.0.1:{unauthorized_port}{path}"
    reason = await _reason(tmp_path, url)
    assert reason.startswith(f"{url} answered HTTP 401: needs sign-in"), reason


async def test_https_to_a_plain_http_port_says_tls_error(tmp_path, unauthorized_port):
    url = f"https://127.0.0.1:{unauthorized_port}/mcp"
    reason = await _reason(tmp_path, url)
    assert reason.startswith(f"TLS error talking to {url}"), reason
    assert "WRONG_VERSION_NUMBER" in reason


async def test_a_server_that_never_answers_says_timed_out(tmp_path, silent_port):
    reason = await _reason(tmp_path, f"http://127.0.0.1:{silent_port}/mcp", init_timeout_s=1.0)
    assert reason == "timed out: the server did not finish the MCP handshake within 1 s"
