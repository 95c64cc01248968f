"""A cap on request bodies of the JSON API (`/api/...`, `/v1/...`): a larger body is refused
with 413 before any route reads it, whether it announces its length or not. Uploads
(`POST /api/files`) have their own, larger cap (`max_upload_bytes`)."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import TooLarge
from .error_render import render, style_for

__all__ = ["BodyLimitMiddleware"]

_CAPPED = ("/api/", "/v1/")
_OWN_CAP = frozenset({"/api/files"})


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith(_CAPPED) or path in _OWN_CAP:
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(path, send)
            return
        # No length given (chunked), or one that may be false: read up to the cap, then hand it on.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client went away: the route sees the disconnect
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._refuse(path, send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, path: str, send: Send) -> None:
        megabytes = self.max_bytes / (1024 * 1024)
        message = f"the request body is larger than {megabytes:g} MB"
        action = (
            "Send less text (long histories: only the recent messages); upload files with POST /api/files. "
            "The administrator sets the limit with SWITCHBOARD_MAX_REQUEST_BYTES."
        )
        wire = render(TooLarge(message, action=action), style_for(path))
        payload = wire.json()
        await send(
            {
                "type": "http.response.start",
                "status": wire.status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})
