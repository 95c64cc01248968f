"""Server-sent-event responses (`/api/chat`, `/v1/chat/completions`), on sse-starlette.

sse-starlette's `EventSourceResponse` watches for `http.disconnect` while it streams, whatever
ASGI version the server speaks (Starlette's StreamingResponse, under ASGI 2.4 servers, sees a
disconnect only when its next write fails, and a turn waiting for an approval or a slow tool
writes nothing for a long time). It also sends a keep-alive comment while the stream is quiet
(proxies close idle streams) and, when the server is asked to stop, lets the stream run for the
hub's shutdown grace before ending it. This module adds what the doors need around it: frames
separated by a bare newline (the wire in docs/protocol.md), and `on_close`, which runs however
the response ends, so a turn's subscription is left at once and the hub's grace period starts.

FastAPI's own `EventSourceResponse` does not fit: it streams only from a generator endpoint, so
`/api/chat` could not answer a refused chat with a JSON error and its status, nor `/v1` choose
JSON or a stream per request, and it is a StreamingResponse (no disconnect watch under ASGI 2.4)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Message, Receive, Scope, Send

__all__ = ["PING_S", "EventStreamResponse", "ServerSentEvent", "data_frame", "frame"]

SEP = "\n"
PING_S = 15.0  # a keep-alive comment (": ping") after this long without an event
_HEADERS = {"Cache-Control": "no-cache"}  # sse-starlette adds X-Accel-Buffering: no (no proxy buffering)


def frame(name: str, data: str) -> ServerSentEvent:
    """`event: <name>` / `data: <data>`; `data` is one line (JSON text)."""
    return ServerSentEvent(data, event=name, sep=SEP)


def data_frame(data: str) -> ServerSentEvent:
    """`data: <data>` alone (OpenAI's stream)."""
    return ServerSentEvent(data, sep=SEP)


def _ping() -> ServerSentEvent:
    return ServerSentEvent(comment="ping", sep=SEP)


class EventStreamResponse(EventSourceResponse):
    def __init__(
        self,
        content: AsyncIterator[ServerSentEvent],
        *,
        on_close: Callable[[], None] | None = None,
        shutdown_grace_s: float = 0.0,
    ) -> None:
        super().__init__(
            content,
            headers=_HEADERS,
            sep=SEP,
            ping=PING_S,
            ping_message_factory=_ping,
            shutdown_grace_period=shutdown_grace_s,
        )
        self._content = content
        self._on_close = on_close  # runs however the response ends, even before the stream started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        open_body = False  # the response started and its last body message is not sent yet

        async def sending(message: Message) -> None:
            nonlocal open_body
            open_body = message["type"] == "http.response.start" or bool(message.get("more_body"))
            await send(message)

        try:
            await super().__call__(scope, receive, sending)
            if open_body and self.active:  # cut short at shutdown (the client is still there): end it cleanly
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write, before its disconnect was read
        finally:
            aclose = getattr(self._content, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
            if self._on_close is not None:
                self._on_close()
