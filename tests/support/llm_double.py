"""A real HTTP server that speaks the OpenAI chat-completions API, scripted by tests.

litellm's own OpenAI code talks to it over the network, so tests exercise the same
request building, SSE parsing and error mapping a real provider would.

    with LLMDouble() as llm:
        llm.enqueue(TextReply("Hello there"), ToolCallReply([ToolCall("dataviz_chart", '{"x": 1}')]))
        ...  # a model configured with model="openai/anything", api_base=llm.base_url
        llm.requests[0]["messages"]  # what the model was sent

Each request takes the next scripted reply; when the queue is empty, `default` answers.
"""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import uvicorn

__all__ = [
    "CutReply",
    "ErrorReply",
    "LLMDouble",
    "OddReply",
    "Reply",
    "TextReply",
    "ToolCall",
    "ToolCallReply",
]


@dataclass(frozen=True)
class TextReply:
    """A text answer, streamed in `chunks` roughly equal pieces."""

    text: str
    chunks: int = 3
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None  # default: counted from words


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str = "{}"  # raw JSON text, sent as is
    id: str | None = "auto"  # "auto": call_<n>; None: the provider sends no id at all


@dataclass(frozen=True)
class ToolCallReply:
    """Tool calls; each call's arguments are split into `fragments` pieces, and the
    calls' fragments are interleaved across chunks, as parallel calls arrive."""

    calls: list[ToolCall]
    fragments: int = 3
    text: str = ""  # optional content before the calls
    finish_reason: str = "tool_calls"
    usage: dict[str, int] | None = None


@dataclass(frozen=True)
class ErrorReply:
    status: int
    message: str = "scripted error"
    retry_after: str | None = None
    error_type: str | None = None  # default: what OpenAI-style APIs send for the status
    code: str | None = None
    location: str | None = None  # a Location header (a redirect)
    set_cookie: str | None = None  # a Set-Cookie header


@dataclass(frozen=True)
class CutReply:
    """Streams `text` in `chunks` pieces, but the connection closes after `cut_after`
    chunks, without [DONE] or a finish reason."""

    text: str
    chunks: int = 4
    cut_after: int = 2


@dataclass(frozen=True)
class OddReply:
    """A 200 answer that is not a stream, whatever the request asked: `whole` answers the
    reply as one JSON completion (a server that ignores `stream`); otherwise `body` is sent
    as `content_type` (say, a proxy's sign-in page)."""

    whole: TextReply | ToolCallReply | None = None
    body: str = ""
    content_type: str = "text/html; charset=utf-8"


Reply = TextReply | ToolCallReply | ErrorReply | CutReply | OddReply


class LLMDouble:
    def __init__(
        self,
        *,
        default: Reply | None = None,
        chunk_delay_s: float = 0.0,
        response_delay_s: float = 0.0,
        model: str = "double-1",
    ) -> None:
        self._settings = (default or TextReply("This is the LLM double."), chunk_delay_s, response_delay_s)
        self.model = model
        self._closing = False
        self._generation = 0
        self._queue: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._port = 0
        self.requests: list[dict[str, Any]] = []  # every request body, in order
        self.request_headers: list[dict[str, str]] = []
        self.request_peers: list[tuple[str, int] | None] = []  # the client's (host, port): shows reused connections
        self.hung_up: list[int] = []  # requests (by index) whose client closed the connection mid-stream
        self.reset()

    def reset(self) -> None:
        """Forget requests and queued replies, restore the constructor's settings
        (lets one running double serve many tests)."""
        self.default, self.chunk_delay_s, self.response_delay_s = self._settings
        self.requests.clear()
        self.request_headers.clear()
        self.request_peers.clear()
        self.hung_up.clear()
        with self._lock:
            self._queue.clear()
            # a request still being answered from before the reset (a test's slow reply its client
            # gave up on) must not note its hang-up among the next test's requests
            self._generation += 1

    # -- scripting ---------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> LLMDouble:
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
                raise RuntimeError("LLM double did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None and self._socket is not None
        self._closing = True  # ends scripted delays, so shutdown need not wait for them
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    # -- ASGI --------------------------------------------------------------------
    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["method"] != "POST" or not scope["path"].rstrip("/").endswith("/chat/completions"):
            await _send_json(send, 404, {"error": {"message": f"no route {scope['path']}", "type": "not_found"}})
            return
        request = json.loads(body or b"{}")
        generation, index = self._generation, len(self.requests)
        self.requests.append(request)
        self.request_headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
        self.request_peers.append(tuple(scope["client"]) if scope.get("client") else None)
        reply = self._next_reply()
        if not await self._pause(self.response_delay_s):
            return
        if isinstance(reply, ErrorReply):
            await _send_error(send, reply)
        elif isinstance(reply, OddReply):
            if reply.whole is not None:
                await _send_json(send, 200, self._completion(reply.whole))
            else:
                data = reply.body.encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 200,
                        "headers": [
                            (b"content-type", reply.content_type.encode()),
                            (b"content-length", str(len(data)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": data, "more_body": False})
        elif not request.get("stream"):
            await _send_json(send, 200, self._completion(reply))
        else:
            finished = asyncio.Event()
            watcher = asyncio.create_task(self._watch_hang_up(receive, finished, index, generation))
            try:
                await self._stream(
                    send, reply, include_usage=bool((request.get("stream_options") or {}).get("include_usage"))
                )
            finally:
                finished.set()
                await watcher

    async def _watch_hang_up(self, receive: Any, finished: asyncio.Event, index: int, generation: int) -> None:
        """Notes a client that disconnects before the stream is finished (unless the double
        was reset since the request came: then it belongs to an earlier test)."""
        waiting = asyncio.ensure_future(receive())
        done = asyncio.ensure_future(finished.wait())
        await asyncio.wait({waiting, done}, return_when=asyncio.FIRST_COMPLETED)
        disconnected = waiting.done() and waiting.result().get("type") == "http.disconnect"
        if disconnected and not finished.is_set() and generation == self._generation:
            self.hung_up.append(index)
        for task in (waiting, done):
            task.cancel()

    async def _stream(self, send: Any, reply: Reply, *, include_usage: bool) -> None:
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        chunk_id = f"chatcmpl-{len(self.requests)}"

        async def event(delta: dict[str, Any] | None, finish_reason: str | None = None, usage: Any = None) -> None:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
            payload = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": self.model,
                "choices": choices,
            }
            if usage is not None:
                payload["usage"] = usage
            await send(
                {"type": "http.response.body", "body": f"data: {json.dumps(payload)}\n\n".encode(), "more_body": True}
            )
            await self._pause(self.chunk_delay_s)

        if isinstance(reply, CutReply):
            for piece in _split(reply.text, reply.chunks)[: reply.cut_after]:
                await event({"role": "assistant", "content": piece})
            return  # returning without the final body message makes uvicorn drop the connection

        await event({"role": "assistant", "content": ""})
        if isinstance(reply, TextReply):
            for piece in _split(reply.text, reply.chunks):
                await event({"content": piece})
        else:
            assert isinstance(reply, ToolCallReply)
            if reply.text:
                await event({"content": reply.text})
            for delta in _tool_call_deltas(reply):
                await event({"tool_calls": delta})
        await event({}, reply.finish_reason)
        if include_usage:
            await event(None, usage=_usage(reply))
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n", "more_body": False})

    async def _pause(self, seconds: float) -> bool:
        """Sleep up to `seconds`; False when the double is shutting down meanwhile."""
        deadline = time.monotonic() + seconds
        while not self._closing and time.monotonic() < deadline:
            await asyncio.sleep(min(0.02, deadline - time.monotonic()))
        return not self._closing

    def _completion(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(reply, ToolCallReply):
            message["content"] = reply.text or None
            message["tool_calls"] = [
                {
                    "id": _call_id(call, i),
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for i, call in enumerate(reply.calls)
            ]
            finish = reply.finish_reason
        else:
            assert isinstance(reply, (TextReply, CutReply))
            message["content"] = reply.text
            finish = getattr(reply, "finish_reason", "stop")
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(reply),
        }


_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}


def _split(text: str, parts: int) -> list[str]:
    parts = max(1, min(parts, len(text) or 1))
    size = -(-len(text) // parts) if text else 0
    return [text[i : i + size] for i in range(0, len(text), size)] if text else [""]


def _call_id(call: ToolCall, index: int) -> str | None:
    return f"call_{index}" if call.id == "auto" else call.id


def _tool_call_deltas(reply: ToolCallReply) -> list[list[dict[str, Any]]]:
    """One list of tool-call deltas per chunk: the first fragment of each call carries
    id, type and name; later fragments only the index and a piece of the arguments."""
    pieces = [_split(call.arguments, reply.fragments) for call in reply.calls]
    chunks: list[list[dict[str, Any]]] = []
    for step in range(max(len(p) for p in pieces)):
        for index, call in enumerate(reply.calls):
            if step >= len(pieces[index]):
                continue
            delta: dict[str, Any] = {"index": index, "function": {"arguments": pieces[index][step]}}
            if step == 0:
                delta["type"] = "function"
                delta["function"]["name"] = call.name
                call_id = _call_id(call, index)
                if call_id is not None:
                    delta["id"] = call_id
            chunks.append([delta])
    return chunks


def _usage(reply: Reply) -> dict[str, int]:
    explicit = getattr(reply, "usage", None)
    if explicit:
        return explicit
    text = getattr(reply, "text", "") + "".join(c.arguments for c in getattr(reply, "calls", []))
    completion = max(1, len(text.split()))
    return {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}


async def _send_json(
    send: Any, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def _send_error(send: Any, reply: ErrorReply) -> None:
    extra = [(b"retry-after", reply.retry_after.encode())] if reply.retry_after else []
    if reply.location:
        extra.append((b"location", reply.location.encode()))
    if reply.set_cookie:
        extra.append((b"set-cookie", reply.set_cookie.encode()))
    error_type = reply.error_type or _ERROR_TYPES.get(
        reply.status, "server_error" if reply.status >= 500 else "invalid_request_error"
    )
    body = {"error": {"message": reply.message, "type": error_type, "param": None, "code": reply.code}}
    await _send_json(send, reply.status, body, extra)
