"""A real HTTP server on 127.0.0.1 that speaks the MCP Registry API v0.1, as its OpenAPI
document says: `GET /v0.1/servers` (`cursor`, `limit`, `search` as a case-insensitive substring of
the name, `version=latest`) answering a `ServerList` (`servers`: `ServerResponse` items,
`metadata.nextCursor` and `count`), and `GET /v0.1/servers/{serverName}/versions/latest` (the name
URL-encoded) answering a `ServerResponse` or 404 `{"error": "Server not found"}`.  Entries are
`server.json` documents (schema 2025-12-11) with the registry's own `_meta`
(`io.modelcontextprotocol.registry/official`: status, publishedAt, updatedAt, isLatest).

    with RegistryDouble() as registry:
        registry.publish(remote_server("com.example/weather"))
        registry.base_url          # http://127.0.0.1:PORT
        registry.down = True       # every request answers 503 from now on
        registry.requests          # (path, query) of every request

Faults for tests: `down`, `raw` (this body for the list instead), `padding` (bytes of whitespace
added to every answer), `redirect` (answer the list with a 302 there), `delay_s` (before each
answer; `most_in_flight` counts the requests it held at once).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any
from urllib.parse import parse_qs, unquote

import uvicorn

__all__ = ["SCHEMA", "RegistryDouble", "package_server", "remote_server"]

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
OFFICIAL = "io.modelcontextprotocol.registry/official"


def remote_server(
    name: str, *, description: str = "A remote MCP server", version: str = "1.0.0", **extra: Any
) -> dict[str, Any]:
    """A server.json with one streamable HTTP remote (override `remotes` to change it)."""
    return {
        "$schema": SCHEMA,
        "name": name,
        "description": description,
        "version": version,
        "remotes": [{"type": "streamable-http", "url": f"https://{name.rsplit('/', 1)[-1]}.example.com/mcp"}],
        **extra,
    }


def package_server(name: str, package: dict[str, Any], *, description: str = "A local MCP server") -> dict[str, Any]:
    return {"$schema": SCHEMA, "name": name, "description": description, "version": "1.0.0", "packages": [package]}


class RegistryDouble:
    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []  # ServerResponse items, in publication order
        self._lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.down = False
        self.raw: bytes | None = None
        self.padding = 0
        self.redirect: str | None = None
        self.delay_s = 0.0  # before each answer
        self.in_flight = self.most_in_flight = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def publish(self, server: dict[str, Any], *, status: str = "active") -> None:
        """Add a version of a server; the earlier versions of that name stop being the latest."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with self._lock:
            for item in self._entries:
                if item["server"]["name"] == server["name"]:
                    item["_meta"][OFFICIAL]["isLatest"] = False
            meta = {"status": status, "publishedAt": now, "updatedAt": now, "isLatest": True}
            self._entries.append({"server": server, "_meta": {OFFICIAL: meta}})

    def set_status(self, name: str, status: str) -> None:
        with self._lock:
            for item in self._entries:
                if item["server"]["name"] == name:
                    item["_meta"][OFFICIAL]["status"] = status

    def list_requests(self) -> int:
        return sum(1 for path, _ in self.requests if path == "/v0.1/servers")

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> RegistryDouble:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self._socket, self._port = sock, sock.getsockname()[1]
        config = uvicorn.Config(self._app, interface="asgi3", log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("registry double did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None and self._socket is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    # -- the API -----------------------------------------------------------------
    def _list(self, query: dict[str, str]) -> tuple[int, Any]:
        search = query.get("search", "").lower()
        with self._lock:
            items = [i for i in self._entries if search in i["server"]["name"].lower()]
        if query.get("version") == "latest":
            items = [i for i in items if i["_meta"][OFFICIAL]["isLatest"]]
        start = int(query["cursor"]) if query.get("cursor", "").isdigit() else 0
        limit = max(1, min(int(query.get("limit", "30") or 30), 100))
        page = items[start : start + limit]
        metadata: dict[str, Any] = {"count": len(page)}
        if start + limit < len(items):
            metadata["nextCursor"] = str(start + limit)
        return 200, {"servers": page, "metadata": metadata}

    def _latest(self, name: str) -> tuple[int, Any]:
        with self._lock:
            found = [i for i in self._entries if i["server"]["name"] == name and i["_meta"][OFFICIAL]["isLatest"]]
        return (200, found[-1]) if found else (404, {"error": "Server not found"})

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        query = {k: v[-1] for k, v in parse_qs(scope.get("query_string", b"").decode()).items()}
        self.requests.append((path, query))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self._answer(path, scope, query, send)
        finally:
            self.in_flight -= 1

    async def _answer(self, path: str, scope: dict[str, Any], query: dict[str, str], send: Any) -> None:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        raw_path = scope.get("raw_path", path.encode()).decode()
        headers: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
        if self.down:
            status, body = 503, b'{"error": "Service Unavailable"}'
        elif path == "/v0.1/servers" and self.redirect:
            status, body, headers = 302, b"", [(b"location", self.redirect.encode())]
        elif path == "/v0.1/servers" and self.raw is not None:
            status, body = 200, self.raw
        elif path == "/v0.1/servers":
            status, answer = self._list(query)
            body = json.dumps(answer).encode()
        elif raw_path.startswith("/v0.1/servers/") and raw_path.endswith("/versions/latest"):
            status, answer = self._latest(unquote(raw_path[len("/v0.1/servers/") : -len("/versions/latest")]))
            body = json.dumps(answer).encode()
        else:
            status, body = 404, b'{"error": "Not found"}'
        body += b" " * self.padding
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
