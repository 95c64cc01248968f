"""A server-sent-events response that notices a client that went away.

Starlette's StreamingResponse, under ASGI 2.4 servers, sees a disconnect only
when its next write fails; a turn that waits (for an approval, a slow tool)
writes nothing for a long time.  This response always watches for
`http.disconnect` while it streams, and closes the iterator when it comes, so
a turn's subscription is left at once and the hub's grace period starts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse", "SSE_HEADERS"]

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # no proxy buffering


class EventStreamResponse(StreamingResponse):
    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterator[str], *, on_close: Callable[[], None] | None = None) -> None:
        super().__init__(content, headers=SSE_HEADERS)
        self._content = content
        self._on_close = on_close  # runs however the response ends, even before the stream started

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def stream() -> None:
                    try:
                        await self.stream_response(send)
                    except OSError:
                        pass  # the client went away mid-write
                    group.cancel_scope.cancel()

                group.start_soon(stream)
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()
        finally:
            aclose = getattr(self._content, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
            if self._on_close is not None:
                self._on_close()
