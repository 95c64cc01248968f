"""`/docs`: the HTTP API described by its OpenAPI schema (`/openapi.json`), in ReDoc,
with ReDoc's script served by the app itself (nothing from a CDN; the page makes no
request elsewhere).  Both need a signed-in user, like the API they describe.

ReDoc's sidebar shows its makers' logo from their CDN, which the page's policy refuses (an
error in the browser's console on every visit): the script is served with that address
replaced by an empty inline image."""

from __future__ import annotations

import asyncio
from functools import cache
from pathlib import Path
from typing import Annotated, Any

import fastapi_offline
from fastapi import Depends, FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from ...identity.users import User
from ..deps import current_user

__all__ = ["mount_docs"]

_ASSETS = Path(fastapi_offline.__file__).parent / "static"
# ReDoc styles itself with <style> elements and renders in a blob worker; no script but its own file.
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "worker-src 'self' blob:; connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard HTTP API</title><link rel="icon" href="/docs/assets/favicon.png"></head>
<body><redoc spec-url="/openapi.json" hide-download-button></redoc>
<script src="/docs/redoc.js"></script></body>
</html>"""
_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
_NO_LOGO = b"data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E"


@cache
def _redoc_script() -> bytes:
    return (_ASSETS / "redoc.standalone.js").read_bytes().replace(_CDN_LOGO, _NO_LOGO)


def mount_docs(app: FastAPI) -> None:
    app.mount("/docs/assets", StaticFiles(directory=str(_ASSETS)), name="docs-assets")

    @app.get("/docs/redoc.js", include_in_schema=False)
    async def redoc_script(_: Annotated[User, Depends(current_user)]) -> Response:
        return Response(
            await asyncio.to_thread(_redoc_script),
            media_type="text/javascript",
            headers={"Cache-Control": "public, max-age=3600"},
        )

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def docs(_: Annotated[User, Depends(current_user)]) -> HTMLResponse:
        return HTMLResponse(_PAGE, headers={"Content-Security-Policy": DOCS_CSP})

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(_: Annotated[User, Depends(current_user)]) -> dict[str, Any]:
        return app.openapi()
