"""The process's front door while the app loads.

Importing the app (FastAPI, the MCP SDK, fastmcp) takes 1.5 s or more, far longer on a
busy machine. `switchboard serve` therefore hands uvicorn this small ASGI app, which needs
only the standard library: it opens the port at once, answers `GET /healthz` while the
real app is imported and built in a worker thread, then passes every request through.
`GET /readyz` answers at once too (503 `starting`: a load balancer or a script polling it
learns the state now, not after the load). Other requests that arrive before the app is
ready wait for it (they are not refused), up to `wait_s`. If the app cannot be built, the cause is said in one line on stderr and in the
log (with the traceback), and `on_failure` is called: `switchboard serve` then stops and
exits non-zero, so a supervisor (Docker's `restart: unless-stopped`, systemd) restarts it
or a person sees why. Until the process has stopped, `/healthz` answers 503 with the error
and every other request a 503 naming the cause.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["STARTUP_FAILURE", "BootingApp", "booting_app", "from_environment"]

STARTUP_FAILURE = 3  # the exit status uvicorn's worker supervisor reads as "do not restart, stop"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("switchboard")


class BootingApp:
    """ASGI app that builds `factory()` in a thread after start-up and then delegates to it."""

    def __init__(
        self,
        factory: Callable[[], ASGIApp],
        *,
        wait_s: float = 120.0,
        on_failure: Callable[[str], None] | None = None,
        prepare: Callable[[], Awaitable[None]] | None = None,
        cleanup: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._factory = factory
        self._prepare = prepare  # runs on the event loop before the build (must not raise)
        self._cleanup = cleanup  # undoes `prepare` when the build fails
        self._wait_s = wait_s
        self.on_failure = on_failure
        self._app: ASGIApp | None = None
        self._error: str | None = None
        self._settled: asyncio.Event | None = None
        self._inner_lifespan: _Lifespan | None = None
        self._loader: asyncio.Task[None] | None = None

    @property
    def app(self) -> ASGIApp | None:
        """The real app once it is built and started, else None."""
        return self._app

    @property
    def error(self) -> str | None:
        """Why the app could not be built, once that is known."""
        return self._error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self._app is None and scope["type"] == "http" and scope.get("path") in ("/healthz", "/readyz"):
            await (self._health(send) if scope["path"] == "/healthz" else self._readiness(send))
            return
        app = await self._wait_for_app()
        if app is not None:
            await app(scope, receive, send)
        elif scope["type"] == "http":
            reason = self._error or f"the app did not finish loading within {self._wait_s:.0f} s"
            await _json(
                send,
                503,
                {
                    "error": {
                        "code": "internal",
                        "message": f"Switchboard is not available: {reason}",
                        "action": "Check the server's log; it restarts once the cause is fixed.",
                    }
                },
            )
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1011, "reason": "Switchboard is not available"})

    # -- lifespan ---------------------------------------------------------------------------

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._settled = asyncio.Event()
                self._loader = asyncio.create_task(self._load(), name="switchboard-load")
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._loader is not None and not self._loader.done():
                    # Let a load in progress finish so that its servers get stopped too.
                    await asyncio.shield(self._loader)
                if self._inner_lifespan is not None:
                    await self._inner_lifespan.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def drain(self) -> None:
        """The built app's `state.drain` (running answers finish), if it has one."""
        drain = getattr(getattr(self._app, "state", None), "drain", None)
        if drain is not None:
            await drain()

    async def _load(self) -> None:
        assert self._settled is not None
        gc.disable()  # see _keep_what_loaded
        try:
            if self._prepare is not None:
                await self._prepare()
            app = await asyncio.to_thread(self._factory)
            lifespan = _Lifespan(app)
            await lifespan.startup()
            self._inner_lifespan = lifespan
            self._app = app
        except asyncio.CancelledError:
            raise  # the process is stopping anyway: not a failed start
        except BaseException as exc:
            self._error = f"{type(exc).__name__}: {exc}"
            self._settled.set()
            if self._cleanup is not None:
                await self._cleanup()
            self._report(exc)
            if not isinstance(exc, Exception):
                raise
        finally:
            _keep_what_loaded()
            self._settled.set()

    def _report(self, exc: BaseException) -> None:
        line = f"Switchboard failed to start: {self._error}"
        if isinstance(exc, PermissionError) and hasattr(os, "getuid"):
            line += f" (the app runs as uid {os.getuid()}: make that path writable for it)"
        print(f"{line}; stopping. Fix the cause and start it again.", file=sys.stderr, flush=True)
        if any(h.get_name() == "switchboard-jsonl" for h in log.handlers):  # the log may be what failed
            log.error(line, exc_info=exc, extra={"event": "startup_failed", "error": self._error})
            from ..logs import flush_logs

            flush_logs()
        if self.on_failure is not None:
            self.on_failure(self._error or "")

    async def _wait_for_app(self) -> ASGIApp | None:
        if self._app is not None or self._settled is None:
            return self._app
        try:
            await asyncio.wait_for(self._settled.wait(), self._wait_s)
        except TimeoutError:
            return None
        return self._app

    async def _health(self, send: Send) -> None:
        if self._error is not None:
            await _json(send, 503, {"status": "failed", "error": self._error})
        else:
            await _json(send, 200, {"status": "ok", "app": "loading"})

    async def _readiness(self, send: Send) -> None:
        """Not ready while the app loads (or when it could not be built): said now, without waiting."""
        if self._error is not None:
            await _json(send, 503, {"status": "not_ready", "reason": f"the app could not be built: {self._error}"})
        else:
            await _json(send, 503, {"status": "starting", "reason": "the app is still loading"})


def _keep_what_loaded() -> None:
    """Loading the app makes some 300,000 objects that live as long as the process (modules,
    classes, validators). While they load, the cyclic garbage collector would walk them again
    and again (a tenth of the app's start-up CPU), and later each full collection would walk
    them all (a fifth of a second). So collection is off while the app loads (`switchboard
    serve` turns it off first thing), and what loaded is then frozen: kept out of every later
    collection, as servers that fork after loading do (`gc.freeze`)."""
    gc.freeze()
    gc.enable()


def booting_app(settings: Any, on_failure: Callable[[str], None] | None = None) -> BootingApp:
    """The app `switchboard serve` runs: Switchboard with `settings`, built after start-up."""

    from ..logs import enable_console, skip_call_sites
    from ..tools.servers.launch import EarlyStarts

    enable_console()  # the operator sees servers come up or fail, and config errors
    skip_call_sites()
    early = EarlyStarts(fork=settings.fork_servers)

    async def start_servers() -> None:
        """Start the stdio servers' processes now, so that their imports run while the app's do."""
        try:
            from ..config.loader import load_mcp_config

            mcp = await asyncio.to_thread(load_mcp_config, settings.defaults_dir, settings.config_dir)
            await early.start(
                mcp, project_root=settings.project_root, log_dir=settings.log_dir, files_origin=settings.base_url
            )
        except Exception:
            log.debug("starting the stdio servers early failed", exc_info=True)

    def build() -> ASGIApp:  # runs in a worker thread while /healthz already answers
        from .app import create_app

        return create_app(settings, early=early, prepare=True)

    return BootingApp(build, on_failure=on_failure, prepare=start_servers, cleanup=early.close)


def _end_worker(reason: str) -> None:
    """A worker process whose app cannot be built ends at once with the status that tells
    uvicorn's supervisor to stop every worker and exit (rather than restart this one forever)."""
    sys.stderr.flush()
    os._exit(STARTUP_FAILURE)


def from_environment() -> BootingApp:
    """uvicorn factory for worker processes: settings from the environment."""
    from ..settings import Settings

    return booting_app(Settings(), on_failure=_end_worker)


class _Lifespan:
    """Runs an ASGI app's lifespan protocol: startup now, shutdown later."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}

        async def run() -> None:  # an ASGI app returns an awaitable, which create_task does not take
            await self._app(scope, self._to_app.get, self._from_app.put)

        self._task = asyncio.create_task(run(), name="app-lifespan")
        await self._to_app.put({"type": "lifespan.startup"})
        reply = await self._reply()
        if reply["type"] != "lifespan.startup.complete":
            raise RuntimeError(reply.get("message") or "the app's start-up failed")

    async def shutdown(self) -> None:
        await self._to_app.put({"type": "lifespan.shutdown"})
        reply = await self._reply()
        if reply["type"] != "lifespan.shutdown.complete":
            log.error("the app's shutdown failed: %s", reply.get("message"), extra={"event": "shutdown_failed"})

    async def _reply(self) -> Message:
        assert self._task is not None
        getter = asyncio.create_task(self._from_app.get())
        await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            return getter.result()
        getter.cancel()
        self._task.result()  # raises what the lifespan raised
        return {"type": "lifespan.failed", "message": "the app's lifespan ended without answering"}


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"cache-control", b"no-store"),
                (b"x-content-type-options", b"nosniff"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
