"""Errors nobody handled, and Starlette's own, in the app's error model.

- `UnhandledErrors` (outermost of the app's middleware): an exception no handler caught is one
  `unhandled_error` record in `app.jsonl` (with its traceback and a request id) and one line on
  the console; the answer is a 500 in the error model carrying the same `request_id`, so a
  user's report finds the record.
- `starlette_error`: the router's 404 and 405 and a malformed multipart upload answer in the
  path's error style like the rest (error_render.py). A 405's `Allow` lists every method
  of the path (Starlette names only the first route that matched it)."""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import BadRequest, Forbidden, MethodNotAllowed, NotFound, SwitchboardError, Unauthorized
from .error_render import render, style_for

__all__ = ["UnhandledErrors", "allowed_methods", "starlette_error"]

log = logging.getLogger("switchboard")

# The router's statuses as errors of the tree; any other status of Starlette's is a bad request
_ERRORS: dict[int, type[SwitchboardError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
}


class UnhandledErrors:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, send_noting_start)
        except Exception as exc:
            request_id = secrets.token_hex(8)
            method, path = scope.get("method", "?"), scope.get("path", "?")
            log.exception(
                "unhandled error %s on %s %s",
                type(exc).__name__,
                method,
                path,
                extra={"event": "unhandled_error", "request_id": request_id, "method": method, "path": path},
            )
            if started:
                return  # the answer is under way: it ends short, and the record says why
            failed = SwitchboardError(
                f"the server failed on this request (request id {request_id})",
                action="Try again; if it keeps failing, give the administrator this request id.",
            )
            response = render(failed, style_for(path), request_id=request_id).response({"X-Request-Id": request_id})
            await response(scope, receive, send)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of this path answers (asking the router for each, since
    included routers hold their routes inside)."""
    routes = request.app.router.routes
    scope = {**request.scope, "path": request.url.path}
    return [
        method
        for method in _METHODS
        if any(route.matches({**scope, "method": method})[0] is Match.FULL for route in routes)
    ]


async def starlette_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    headers = dict(exc.headers or {})
    if status == 405:
        headers["Allow"] = ", ".join(allowed_methods(request))
        message = f"{request.method} is not allowed here"
        action: str | None = f"Use {headers['Allow']}."
    elif status == 404 and exc.detail == "Not Found":
        message, action = f"no such path: {request.url.path}", None
    elif status == 400 and "multipart" in request.headers.get("content-type", ""):
        message, action = (
            f"the upload is not valid multipart data: {exc.detail}",
            "Send the file as multipart/form-data.",
        )
    else:
        message, action = str(exc.detail), None
    error = _ERRORS.get(status, BadRequest)(message, action=action)
    wire = render(error, style_for(request.url.path))
    if status not in _ERRORS:  # e.g. a 413 of Starlette's: its own status
        wire = replace(wire, status=status)
    return wire.response(headers)
