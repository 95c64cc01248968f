"""The app factory: `create_app(settings, services=...)`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .. import __version__
from ..errors import SwitchboardError
from ..logs import flush_logs, setup_logging
from ..services import Services, build_services
from ..settings import Settings
from . import admin, api, conversations, pages, ws
from .security import EdgePolicy, RequestGuardMiddleware, SecurityHeadersMiddleware, http_status

__all__ = ["create_app"]

log = logging.getLogger("switchboard")


async def _retention(services: Services) -> None:
    days = services.settings.retention_days
    if not days:
        return
    while True:
        removed = await asyncio.to_thread(services.artifacts.purge_older_than, days * 86400)
        if removed:
            log.info("removed %d old files", removed, extra={"event": "retention", "removed": removed})
        await asyncio.sleep(6 * 3600)


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    settings = settings or (services.settings if services else Settings())
    setup_logging(settings.log_dir)
    services = services or build_services(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        for error in services.config.all_errors():
            log.warning("config error: %s", error, extra={"event": "config_error"})
        log.info("switchboard %s starting", __version__, extra={"event": "startup", "servers": len(services.pool.connections)})
        await services.open_store()
        services.pool.start()  # in the background: the app serves at once
        retention = asyncio.create_task(_retention(services), name="retention")
        warm_up = getattr(services.llm, "warm_up", None)
        if warm_up is not None:
            warm_up()  # load the model library off the event loop
        try:
            yield
        finally:
            retention.cancel()
            await services.close()
            log.info("switchboard stopped", extra={"event": "shutdown"})
            flush_logs()

    app = FastAPI(title="Switchboard", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.services = services
    # Added first, so it runs inside the headers middleware: its refusals get the headers too.
    app.add_middleware(RequestGuardMiddleware, policy=EdgePolicy.from_settings(settings))
    app.add_middleware(SecurityHeadersMiddleware)

    @app.exception_handler(SwitchboardError)
    async def _switchboard_error(request: Request, exc: SwitchboardError) -> JSONResponse:
        body = {"error": {"code": exc.code, "message": exc.message, "action": exc.action}}
        return JSONResponse(body, status_code=http_status(exc))

    app.include_router(api.router)
    app.include_router(conversations.router)
    app.include_router(admin.router)
    app.include_router(ws.router)
    pages.mount(app, settings)
    return app
