"""The app factory: `create_app(settings, services=...)`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.authentication import AuthenticationMiddleware

from .. import __version__
from ..environment import set_defaults
from ..errors import BadRequest, SwitchboardError
from ..logs import flush_logs, setup_logging
from ..services import Services, build_services
from ..settings import Settings
from ..tools.servers.launch import EarlyStarts
from . import api, apps, connect, conversations, http_chat, metrics, pages, tasks, tokens, ws
from .admin import audit as admin_audit
from .admin import host as admin
from .admin import servers as admin_servers
from .admin import tools as admin_tools
from .admin import users as admin_users
from .admin.presence import keep_shared
from .authn import SwitchboardAuthBackend
from .body_limit import BodyLimitMiddleware
from .docs.openapi import app_errors, install_openapi, openai_errors
from .docs.page import mount_docs
from .error_render import render, style_for
from .failures import UnhandledErrors, starlette_error
from .open_files import raise_open_files_limit
from .sandbox.origin import SandboxMiddleware, SandboxPolicy
from .security import EdgePolicy, RequestGuardMiddleware, SecurityHeadersMiddleware
from .servers import own as user_servers
from .servers import registry, shares
from .v1 import door as openai_compat

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


def prepare_routes(app: FastAPI) -> None:
    """FastAPI works out a route's parameters and models the first time a request is matched
    against it, which made a new process's first request walk ~60 routes and wait 0.4-0.6 s (the
    page's first open after a start or deploy). Done here, at start, in a worker thread (FastAPI
    builds them under a lock): a path no route has walks them all."""
    scope = {"type": "http", "path": "/\u0000", "method": "GET", "headers": [], "query_string": b"", "root_path": ""}
    for route in app.router.routes:
        route.matches({**scope, "app": app})


def create_app(
    settings: Settings | None = None,
    *,
    services: Services | None = None,
    early: EarlyStarts | None = None,
    prepare: bool = False,
) -> FastAPI:
    """`early`: stdio server processes `switchboard serve` started before the app was built;
    `prepare`: its routes prepared at start (`prepare_routes`; `switchboard serve` does).
    The environment's defaults (environment.py) are set here too, for an app built in code; set them
    before importing this module to keep fastmcp's import lean as `switchboard serve` does."""
    set_defaults()
    settings = settings or (services.settings if services else Settings())
    setup_logging(settings.log_dir)
    services = services or build_services(settings, early=early)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        for error in services.config.all_errors():
            log.warning("config error: %s", error, extra={"event": "config_error"})
        log.info(
            "switchboard %s starting",
            __version__,
            extra={"event": "startup", "servers": len(services.pool.connections)},
        )
        raise_open_files_limit()  # each websocket is a file descriptor
        await services.life.start()  # servers start in the background: the app serves at once
        if prepare:  # off the loop; nothing waits for it
            app.state.routes_prepared = asyncio.get_running_loop().run_in_executor(None, prepare_routes, app)
        retention = asyncio.create_task(_retention(services), name="retention")
        shared = asyncio.create_task(keep_shared(services, app.state.open_sockets), name="presence")
        try:
            yield
        finally:
            retention.cancel()
            shared.cancel()
            await services.life.close()
            log.info("switchboard stopped", extra={"event": "shutdown"})
            flush_logs()

    # The schema is at /openapi.json, and described at /docs (ReDoc, served from the app itself), both
    # for signed-in users only (docs_page.py).
    app = FastAPI(
        title="Switchboard", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.services = services
    app.state.drain = services.turns.drain  # `switchboard serve` calls it at SIGTERM, before closing connections
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)  # innermost: after the guard
    app.state.sandbox = SandboxPolicy.from_settings(settings)
    app.state.open_sockets = ws.OpenSockets(settings.max_sockets_per_user)
    services.life.sessions_revoked.append(
        app.state.open_sockets.close_user
    )  # the admin console's revoke, from any process
    # Who the user is is worked out only for requests the guard let through.
    app.add_middleware(AuthenticationMiddleware, backend=SwitchboardAuthBackend())
    # Added before the headers middleware, so it runs inside it: its refusals get the headers too.
    app.add_middleware(RequestGuardMiddleware, policy=EdgePolicy.from_settings(settings))
    # Outside the guard: a request for the sandbox host gets the app sandbox's pages only.
    app.add_middleware(SandboxMiddleware, policy=app.state.sandbox)
    # An exception nothing else handled: recorded with a request id, answered in the error model.
    app.add_middleware(UnhandledErrors)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_exception_handler(StarletteHTTPException, starlette_error)  # 404, 405, malformed multipart

    @app.exception_handler(SwitchboardError)
    async def _switchboard_error(request: Request, exc: SwitchboardError) -> JSONResponse:
        return render(exc, style_for(request.url.path)).response()

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        if not request.url.path.startswith("/v1/"):
            return await request_validation_exception_handler(request, exc)
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"] if p != "body") or "body"
        return render(BadRequest(f"malformed request ({where}: {first['msg']})"), "openai").response()

    # Each router with the error statuses its routes can answer (openapi_doc.py).
    app.include_router(api.router, responses=app_errors(400, 401, 403, 404, 413, 503))
    app.include_router(conversations.router, responses=app_errors(400, 401, 403, 404, 409, 413, 503))
    app.include_router(apps.router, responses=app_errors(400, 401, 403, 404, 413, 429, 503))
    app.include_router(admin.router, responses=app_errors(400, 401, 403, 404, 503))
    app.include_router(admin_servers.router, responses=app_errors(400, 401, 403, 404, 409, 413, 503))
    app.include_router(admin_users.router, responses=app_errors(400, 401, 403, 404, 413, 503))
    app.include_router(admin_audit.router, responses=app_errors(400, 401, 403, 503))
    app.include_router(admin_tools.router, responses=app_errors(400, 401, 403, 404, 409, 413, 503))
    app.include_router(user_servers.router, responses=app_errors(400, 401, 403, 404, 409, 413, 503))
    app.include_router(shares.router, responses=app_errors(400, 401, 403, 404, 409, 413, 503))
    app.include_router(http_chat.router, responses=app_errors(400, 401, 403, 404, 409, 413, 429, 503))
    app.include_router(tokens.router, responses=app_errors(400, 401, 403, 404, 413, 503))
    app.include_router(tasks.router, responses=app_errors(400, 401, 403, 404, 503))
    app.include_router(openai_compat.router, responses=openai_errors(400, 401, 403, 404, 413, 429, 503))
    app.include_router(connect.router, responses=app_errors(400, 401, 403, 404, 413, 503))
    app.include_router(registry.router, responses=app_errors(401, 403))
    app.include_router(ws.router)
    app.include_router(metrics.router)
    pages.mount(app, settings)
    mount_docs(app)
    install_openapi(app)
    return app
