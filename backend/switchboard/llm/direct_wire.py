"""The direct path's HTTP: one httpx transport per endpoint, and the server-sent events of a
chat-completions stream read from bytes as they arrive (`llm/openai_direct.py` uses them)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import openai
from cachetools import LRUCache

__all__ = ["DirectPool", "DirectStream"]

_DRAIN_S = 1.0  # after [DONE]: how long the end of the body may take (then the connection is dropped)
_LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=100)  # the OpenAI SDK's


class DirectPool:
    """One httpx transport (one connection pool) per base URL, kept until the pool is closed.

    The request goes to the transport itself: no client-level cookies, auth flows,
    redirects or event hooks, none of which a chat-completions call uses. The transport
    still brings httpx's TLS settings (`SSL_CERT_FILE` / `SSL_CERT_DIR` included) and
    errors; a proxy from the environment (`HTTPS_PROXY`, `NO_PROXY`, ...) is honoured."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._transports: dict[str, httpx.AsyncHTTPTransport] = {}
        self._environ = environ
        self._tools_json: LRUCache[tuple[int, ...], tuple[list[dict[str, Any]], str]] = LRUCache(maxsize=32)

    def transport(self, url: httpx.URL) -> httpx.AsyncHTTPTransport:
        origin = f"{url.scheme}://{url.netloc.decode('ascii')}"
        found = self._transports.get(origin)
        if found is None:
            proxy = _proxy_for(url, os.environ if self._environ is None else self._environ)
            found = httpx.AsyncHTTPTransport(proxy=proxy, limits=_LIMITS, trust_env=True)
            self._transports[origin] = found
        return found

    def tools_json(self, tools: list[dict[str, Any]]) -> str:
        """The tools array as JSON. The tool registry hands out one definition (one dict) per
        tool until it changes, so a list of the same dicts has the same JSON; the dicts are
        held here, so their ids stay theirs while kept."""
        key = tuple(map(id, tools))
        found = self._tools_json.get(key)
        if found is None:
            found = self._tools_json[key] = (list(tools), json.dumps(tools, ensure_ascii=False))
        return found[1]

    def __len__(self) -> int:
        return len(self._transports)

    async def aclose(self) -> None:
        transports, self._transports = list(self._transports.values()), {}
        for transport in transports:
            await transport.aclose()


class DirectStream:
    """The chunks (plain dicts) of one open chat-completions stream; `aclose` hangs up
    unless the stream was read to its end."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        response = self.response
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "application/json":  # a server that answered the whole completion at once
            try:
                yield _as_chunk(json.loads(await response.aread()), response)
            finally:
                await response.aclose()
            return
        chunks = response.aiter_bytes()
        seen = False
        try:
            async for data in _event_data(chunks):
                seen = True
                if data.startswith(b"[DONE]"):
                    break
                chunk = json.loads(data)
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("error"):  # an error sent inside the stream
                    error = chunk["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise openai.APIError(message if isinstance(message, str) and message else
                                          "An error occurred during streaming", request=response.request, body=error)  # fmt: skip
                yield chunk
            else:
                if not seen:  # e.g. a proxy's sign-in page: not an empty answer
                    raise openai.APIError(f"The endpoint answered HTTP {response.status_code} with no server-sent events "
                                          f"(Content-Type: {kind or 'none'}); check the model's api_base",
                                          request=response.request, body=None)  # fmt: skip
                return
            # after [DONE]: read the body to its end, so that the connection goes back to the
            # pool instead of being closed (a new TLS handshake for the next call)
            try:
                async with asyncio.timeout(_DRAIN_S):
                    async for _ in chunks:
                        pass
            except (TimeoutError, httpx.HTTPError):
                pass
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        await self.response.aclose()


def _as_chunk(completion: Any, response: httpx.Response) -> dict[str, Any]:
    """A whole (non-streamed) chat completion in the form of one stream chunk."""
    if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
        raise openai.APIError("The endpoint answered with JSON that is not a chat completion; check the model's api_base",
                              request=response.request, body=completion)  # fmt: skip
    if completion.get("error"):
        raise openai.APIError(str(completion["error"]), request=response.request, body=completion["error"])
    choices = []
    for choice in completion["choices"]:
        if not isinstance(choice, dict):
            continue
        found = choice.get("message")
        message: dict[str, Any] = found if isinstance(found, dict) else {}
        calls = [{**call, "index": n} for n, call in enumerate(message.get("tool_calls") or []) if isinstance(call, dict)]
        delta = {"content": message.get("content"), "tool_calls": calls}
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    return {"choices": choices, "usage": completion.get("usage")}


async def _event_data(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    parser = _EventParser()
    async for raw in chunks:
        for data in parser.feed(raw):
            yield data
    for data in parser.end():
        yield data


class _EventParser:
    """Server-sent events from bytes as they arrive: the `data` of each event (its
    `data:` lines joined), other fields and comments skipped. Lines end in LF, CRLF or CR."""

    def __init__(self) -> None:
        self._rest = b""
        self._data: list[bytes] = []

    def feed(self, raw: bytes) -> list[bytes]:
        text = self._rest + raw
        if b"\r" in text:
            held = text.endswith(b"\r")  # a CR at the end may be the first half of a CRLF
            text = (text[:-1] if held else text).replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        lines = text.split(b"\n")
        self._rest = lines.pop()
        out: list[bytes] = []
        data = self._data
        for line in lines:
            if line.startswith(b"data:"):
                data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif not line and data:
                out.append(data[0] if len(data) == 1 else b"\n".join(data))
                data.clear()
        return out

    def end(self) -> list[bytes]:
        """At the end of the body: a CR held back was a line's end. An event without
        its blank line is dropped, as the SSE rules say."""
        return self.feed(b"\n") if self._rest.endswith(b"\r") else []


def _proxy_for(url: httpx.URL, environ: Mapping[str, str]) -> str | None:
    """The proxy the environment names for this URL, as httpx's client would pick it."""
    def env(name: str) -> str:
        return environ.get(name) or environ.get(name.upper()) or ""

    host = url.host
    for entry in env("no_proxy").split(","):
        entry = entry.strip().lstrip(".")
        if entry == "*" or (entry and (host == entry or host.endswith("." + entry))):
            return None
    proxy = env(f"{url.scheme}_proxy") or env("all_proxy")
    if proxy and "://" not in proxy:
        proxy = f"http://{proxy}"
    return proxy or None
