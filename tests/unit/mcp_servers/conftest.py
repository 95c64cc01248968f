"""Fixtures for the bundled MCP servers: load a server's main.py by path, serve
test files over real HTTP, and build small PDFs with a text layer."""

from __future__ import annotations

import importlib.util
import re
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.pdf import build_pdf

SERVERS_DIR = Path(__file__).resolve().parents[3] / "backend" / "mcp"


def load_server(name: str, *, test_tools: bool = False) -> ModuleType:
    """The server's main module; ``test_tools`` loads a second copy as the host's tests
    start it, with DATAVIZ_TEST_TOOLS=1 (the variable is read when the module loads)."""
    module_name = f"bundled_{name}_main" + ("_test_tools" if test_tools else "")
    if module_name in sys.modules:
        return sys.modules[module_name]
    with pytest.MonkeyPatch.context() as patch:
        if test_tools:
            patch.setenv(f"{name.upper()}_TEST_TOOLS", "1")
        else:
            patch.delenv(f"{name.upper()}_TEST_TOOLS", raising=False)
        return _load(name, module_name)


def _load(name: str, module_name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(module_name, SERVERS_DIR / name / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


SIGNATURE = "ab" * 32  # the shape of the host's HMAC-SHA256 signature
FILE_PATH = re.compile(r"(?:/[\w-]+)*/api/files/(?P<id>[\w-]+)/content")


class FileServer:
    """A real HTTP server on 127.0.0.1 that serves files at the host's signed-link
    shape (``/api/files/{id}/content?u=&e=&s=``). The file ids ``expired`` and
    ``broken`` answer 403 and 500; ``redirect()`` makes an id answer a redirect; any
    other path is an "internal service" answering ``internal secret``. ``requests``
    records every path asked for."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, str, str | None, bool]] = {}
        self.redirects: dict[str, str] = {}
        self.requests: list[str] = []
        files, redirects, requests = self.files, self.redirects, self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                requests.append(path)
                match = FILE_PATH.fullmatch(path)
                if match is None:
                    self._send(b"internal secret", "text/plain", None, True)
                elif match["id"] == "expired":
                    self.send_error(403, "signature expired")
                elif match["id"] == "broken":
                    self.send_error(500)
                elif match["id"] in redirects:
                    self.send_response(302)
                    self.send_header("Location", redirects[match["id"]])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif match["id"] in files:
                    self._send(*files[match["id"]])
                else:
                    self.send_error(404)

            def _send(self, data: bytes, mime: str, download_name: str | None, with_length: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", mime)
                if with_length:  # without it, HTTP/1.0 ends the body by closing
                    self.send_header("Content-Length", str(len(data)))
                if download_name:
                    disposition = f"attachment; filename*=UTF-8''{quote(download_name)}"
                    self.send_header("Content-Disposition", disposition)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, file_id: str, *, prefix: str = "") -> str:
        """The signed-link shape the host hands out (with a well-formed, fake signature)."""
        return f"{self.base}{prefix}/api/files/{file_id}/content?u=alice%40example.com&e=9999999999&s={SIGNATURE}"

    def add(
        self,
        file_id: str,
        data: bytes,
        mime: str,
        download_name: str | None = None,
        *,
        content_length: bool = True,
    ) -> str:
        """Serve ``data`` as file ``file_id`` and return its signed-shape URL."""
        self.files[file_id] = (data, mime, download_name, content_length)
        return self.url(file_id)

    def redirect(self, file_id: str, location: str) -> str:
        self.redirects[file_id] = location
        return self.url(file_id)

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


@pytest.fixture(scope="session")
def pdfbasic_mcp() -> Any:
    return load_server("pdfbasic").mcp


@pytest.fixture(scope="session")
def dataviz_mcp() -> Any:
    return load_server("dataviz").mcp


@pytest.fixture(scope="session")
def dataviz_test_tools_mcp() -> Any:
    return load_server("dataviz", test_tools=True).mcp


@pytest.fixture(scope="session")
def common() -> ModuleType:
    """The servers' shared helper package, imported the way the servers import it."""
    if str(SERVERS_DIR) not in sys.path:
        sys.path.insert(0, str(SERVERS_DIR))
    return importlib.import_module("_common")


@pytest.fixture(autouse=True)
def _no_files_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a server run on its own: no host origin configured."""
    monkeypatch.delenv("SWITCHBOARD_FILES_ORIGIN", raising=False)


@pytest.fixture
def file_server() -> Iterator[FileServer]:
    with FileServer() as server:
        yield server


@pytest.fixture
def make_pdf() -> Callable[..., bytes]:
    return build_pdf
