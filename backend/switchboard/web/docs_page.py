"""`/docs`: the HTTP API described by its OpenAPI schema (`/openapi.json`), in ReDoc,
with ReDoc's script served by the app itself (nothing from a CDN; the page makes no
request elsewhere).  Both need a signed-in user, like the API they describe."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import fastapi_offline
from fastapi import Depends, FastAPI
from fastapi.responses import HTMLResponse

from ..auth import User
from .deps import current_user
from fastapi.staticfiles import StaticFiles

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
<script src="/docs/assets/redoc.standalone.js"></script></body>
</html>"""


def mount_docs(app: FastAPI) -> None:
    app.mount("/docs/assets", StaticFiles(directory=str(_ASSETS)), name="docs-assets")

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    async def docs(_: Annotated[User, Depends(current_user)]) -> HTMLResponse:
        return HTMLResponse(_PAGE, headers={"Content-Security-Policy": DOCS_CSP})

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(_: Annotated[User, Depends(current_user)]) -> dict[str, Any]:
        return app.openapi()
