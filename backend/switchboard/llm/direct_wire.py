"""The direct path's HTTP: one aiohttp session (its connection pool) per client, and the
server-sent events of a chat-completions stream read from bytes as they arrive
(`llm/openai_direct.py` uses them).

aiohttp, not httpx, carries these requests: its C HTTP parser costs a third of httpx's
CPU per streamed call (docs/benchmarks.md §23), and a model call is the largest part of a
tool turn's CPU. A stream that breaks, stalls, sends bad JSON or an error raises the
`LLMError` its `DirectFailures` makes of it (`llm/direct_errors.py`)."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import httpx
from cachetools import LRUCache
from yarl import URL

from switchboard.llm.direct_errors import DirectFailures

__all__ = ["DirectPool", "DirectStream"]

_READ_FAILURES = (aiohttp.ClientError, OSError, TimeoutError)

_DRAIN_S = 1.0  # after [DONE]: how long the end of the body may take (then the connection is dropped)
_KEEPALIVE_S = 5.0  # an idle connection is kept this long (httpx's default)
_MOST_CONNECTIONS = 1000  # the OpenAI SDK's limit


class DirectPool:
    """One aiohttp session per client and event loop, kept until the pool is closed. Its
    connection pool keeps a connection per endpoint alive between calls.

    The request goes out as it is: no cookies, auth flows or redirects (a same-host
    307/308 is followed by `open_stream`). TLS uses httpx's settings (certifi's roots,
    or `SSL_CERT_FILE` / `SSL_CERT_DIR`); a proxy from the environment (`HTTPS_PROXY`,
    `NO_PROXY`, ...) is honoured as httpx's client would pick it."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._environ = environ
        self._proxies: dict[str, str | None] = {}
        self._tls: ssl.SSLContext | None = None
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        self._tools_json: LRUCache[tuple[int, ...], tuple[list[dict[str, Any]], str]] = LRUCache(maxsize=32)

    def session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(limit=_MOST_CONNECTIONS, limit_per_host=0, keepalive_timeout=_KEEPALIVE_S)
            # no cookie jar: a model endpoint's Set-Cookie is not kept, and no request carries one
            self._session = aiohttp.ClientSession(
                connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar()
            )
            self._loop = loop
        return self._session

    async def post(self, url: URL, headers: Mapping[str, str], content: bytes, wait: float) -> aiohttp.ClientResponse:
        """Sends the request; returns once the response's head arrived. `wait` limits the
        connection (the wait for a pooled one included) and every read."""
        timeout = self._timeouts.get(wait)
        if timeout is None:
            timeout = self._timeouts[wait] = aiohttp.ClientTimeout(total=None, connect=wait, sock_read=wait)
        origin = f"{url.scheme}://{url.raw_authority}"
        proxy = self._proxies.get(origin, "")
        if proxy == "":
            proxy = self._proxies[origin] = _proxy_for(
                httpx.URL(str(url)), os.environ if self._environ is None else self._environ
            )
        tls: ssl.SSLContext | bool = True
        if url.scheme == "https":
            tls = self._tls = self._tls or httpx.create_ssl_context()
        return await self.session().request(
            "POST", url, data=content, headers=headers, proxy=proxy, ssl=tls, allow_redirects=False, timeout=timeout
        )

    def tools_json(self, tools: list[dict[str, Any]]) -> str:
        """The tools array as JSON. The tool registry hands out one definition (one dict) per
        tool until it changes, so a list of the same dicts has the same JSON; the dicts are
        held here, so their ids stay theirs while kept."""
        key = tuple(map(id, tools))
        found = self._tools_json.get(key)
        if found is None:
            found = self._tools_json[key] = (list(tools), json.dumps(tools, ensure_ascii=False))
        return found[1]

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and self._loop is asyncio.get_running_loop():
            await session.close()


class DirectStream:
    """The chunks (plain dicts) of one open chat-completions stream; `aclose` hangs up
    unless the stream was read to its end. Its failures are `failures`' errors."""

    def __init__(self, response: aiohttp.ClientResponse, failures: DirectFailures) -> None:
        self.response = response
        self.failures = failures

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for batch in self.batches():
            for chunk in batch:
                yield chunk

    async def batches(self) -> AsyncIterator[list[dict[str, Any]]]:
        """The chunks of each read from the socket, in order, as one list: a fast stream's
        chunks arrive several to a read, and each costs the rest of the way (events, the
        turn, the websocket) far more than its parsing, so they go on together."""
        response, failures = self.response, self.failures
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            if kind == "application/json":  # a server that answered the whole completion at once
                try:
                    body = await response.read()
                except _READ_FAILURES as exc:
                    raise failures.broke(exc, received=False) from exc
                yield [_as_chunk(body, failures)]
                return
            seen = done = False
            parser, content = _EventParser(), response.content
            while not done:  # the events of each read, parsed here (no generator between)
                try:
                    raw = await content.readany()
                except _READ_FAILURES as exc:
                    raise failures.broke(exc, received=seen) from exc
                events = parser.feed(raw) if raw else parser.end()
                if events:
                    seen = True
                    for n, data in enumerate(events):
                        if data.startswith(b"[DONE]"):
                            done, events = True, events[:n]
                            break
                    chunks, failure = _parsed(events, failures)
                    if chunks:
                        yield chunks
                    if failure is not None:
                        raise failure
                if not raw and not done:  # the body ended without [DONE]
                    if not seen:  # e.g. a proxy's sign-in page: not an empty answer
                        raise failures.not_a_stream(response.status, kind)
                    return
            # after [DONE]: read the body to its end, so that the connection goes back to the
            # pool instead of being closed (a new TLS handshake for the next call)
            try:
                async with asyncio.timeout(_DRAIN_S):
                    while await response.content.readany():
                        pass
            except (TimeoutError, aiohttp.ClientError):
                pass
        finally:
            response.release()  # back to the pool when read to its end; closed otherwise

    async def aclose(self) -> None:
        self.response.release()


def _parsed(events: list[bytes], failures: DirectFailures) -> tuple[list[dict[str, Any]], Exception | None]:
    """The events' JSON objects, in order (anything else is skipped), and the failure that
    ends the stream after them: the first event that is not JSON, or an error sent inside
    the stream."""
    chunks: list[dict[str, Any]] = []
    for data in events:
        try:
            chunk = _json(data)
        except ValueError as exc:
            failure = failures.garbled(data)
            failure.__cause__ = exc
            return chunks, failure
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):  # an error sent inside the stream
            return chunks, failures.said(chunk["error"])
        chunks.append(chunk)
    return chunks, None


_raw_decode = json.JSONDecoder().raw_decode


def _json(data: bytes) -> Any:
    """`json.loads(data)`, at less than half its cost for what streams send: compact UTF-8
    JSON (`loads` first works out the encoding and allows whitespace around the value)."""
    try:
        text = data.decode()
        value, end = _raw_decode(text)
        if end == len(text):  # the whole event (else `loads` allows whitespace around it, or refuses)
            return value
    except ValueError:
        pass
    return json.loads(data)


def _as_chunk(body: bytes, failures: DirectFailures) -> dict[str, Any]:
    """A whole (non-streamed) chat completion in the form of one stream chunk."""
    try:
        completion = json.loads(body)
    except ValueError as exc:
        raise failures.garbled(body) from exc
    if isinstance(completion, dict) and completion.get("error"):
        raise failures.said(completion["error"])
    if not isinstance(completion, dict) or not isinstance(completion.get("choices"), list):
        raise failures.garbled(body)
    choices = []
    for choice in completion["choices"]:
        if not isinstance(choice, dict):
            continue
        found = choice.get("message")
        message: dict[str, Any] = found if isinstance(found, dict) else {}
        calls = [
            {**call, "index": n} for n, call in enumerate(message.get("tool_calls") or []) if isinstance(call, dict)
        ]
        delta = {"content": message.get("content"), "tool_calls": calls}
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    return {"choices": choices, "usage": completion.get("usage")}


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
            text = (text[:-1] if held else text).replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (
                b"\r" if held else b""
            )
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
