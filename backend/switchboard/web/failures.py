"""Errors nobody handled, and Starlette's own, in the app's error model.

- `UnhandledErrors` (outermost of the app's middleware): an exception no handler caught is one
  `unhandled_error` record in `app.jsonl` (with its traceback and a request id) and one line on
  the console; the answer is a 500 in the error model carrying the same `request_id`, so a
  user's report finds the record.
- `starlette_error`: the router's 404 and 405 and a malformed multipart upload answer
  `{"error": {"code", "message", "action"}}` like the rest. A 405's `Allow` lists every method
  of the path (Starlette names only the first route that matched it)."""

from __future__ import annotations

import logging
import secrets

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["UnhandledErrors", "allowed_methods", "starlette_error"]

log = logging.getLogger("switchboard")

_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed"}


def error_body(code: str, message: str, action: str | None = None, **more: str) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "action": action, **more}}


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
            body = error_body(
                "internal",
                f"the server failed on this request (request id {request_id})",
                "Try again; if it keeps failing, give the administrator this request id.",
                request_id=request_id,
            )
            response = JSONResponse(body, status_code=500, headers={"X-Request-Id": request_id})
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
    code = _CODES.get(status, "bad_request")
    if request.url.path.startswith("/v1/"):
        from .openai_compat import openai_error

        response = openai_error(status, code, message, action)
        response.headers.update(headers)
        return response
    return JSONResponse(error_body(code, message, action), status, headers=headers)
