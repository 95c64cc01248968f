"""Command line: `switchboard serve`, `switchboard check-config`, `switchboard db upgrade`,
`switchboard chat` (a terminal client, `cli/chat.py`), `switchboard audit` (`audit/cli.py`)."""

from __future__ import annotations

import argparse
import errno
import gc
import os
import socket
import sys
from typing import Any

from .environment import set_defaults
from .settings import Settings, is_loopback_host


def _settings_or_exit(**overrides: object) -> Settings:
    """The settings, or one line that names every bad setting and exit status 1."""
    from pydantic import ValidationError

    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"SWITCHBOARD_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}"
            for error in exc.errors()
        )  # the value itself is not repeated: it may be a secret
        print(f"Switchboard cannot start: bad setting(s): {problems}", file=sys.stderr)
        raise SystemExit(1) from None


def _share_metrics(settings: Settings) -> None:
    """Worker processes write their metrics to one folder, which `/metrics` sums (any worker may
    answer the scrape). The folder is emptied first: counts of an earlier run must not add up."""
    import shutil

    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or str(settings.data_dir / "metrics")
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return  # an unusable data dir: each worker then fails to start saying so, in one line
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder


def serve(args: argparse.Namespace) -> int:
    gc.disable()  # until the app has loaded (web/boot.py, `_keep_what_loaded`)
    import uvicorn

    from .web.boot import STARTUP_FAILURE, booting_app
    from .web.serving import DrainingServer

    overrides = {
        k: v for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers)) if v is not None
    }
    settings = _settings_or_exit(**overrides)
    _refuse_workers_on_sqlite(settings)
    if settings.auth_mode == "dev" and not is_loopback_host(settings.host):
        print(
            f"WARNING: dev auth mode serves every visitor as {settings.dev_user} on {settings.host}. "
            "Use SWITCHBOARD_AUTH_MODE=proxy behind an authenticating proxy for anything but local use.",
            file=sys.stderr,
        )
    sock = _listening_socket(settings.host, settings.port)
    print(
        f"Switchboard on http://{settings.host}:{settings.port}  (logs: {settings.log_dir / 'app.jsonl'}"
        + (f", {settings.workers} worker processes)" if settings.workers > 1 else ")"),
        flush=True,
    )
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "warning",
        "ws": "websockets-sansio",
    }
    if settings.workers > 1:
        from uvicorn.supervisors import Multiprocess

        # Each worker is a fresh process that reads its settings from the environment. A worker
        # whose app cannot be built exits with STARTUP_FAILURE, and the supervisor then stops.
        os.environ.update({f"SWITCHBOARD_{k.upper()}": str(v) for k, v in overrides.items()})
        _share_metrics(settings)
        config = uvicorn.Config(
            "switchboard.web.boot:from_environment", factory=True, workers=settings.workers, **options
        )
        supervisor = Multiprocess(config, sockets=[sock])
        gc.enable()  # this process only supervises; each worker loads the app itself
        supervisor.run()
        return 1 if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes) else 0
    server: uvicorn.Server | None = None

    def stop(reason: str) -> None:  # the app cannot be built: stop serving, then exit non-zero
        assert server is not None
        server.should_exit = True

    app = booting_app(settings, on_failure=stop)
    server = DrainingServer(uvicorn.Config(app, **options), app.drain)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C: uvicorn has shut down and re-raises it; no traceback for that
        print("Switchboard stopped.", file=sys.stderr, flush=True)
        _exit_now(130)
    if app.error is not None or not server.started:
        return 1
    return 0


def _refuse_workers_on_sqlite(settings: Settings) -> None:
    """Several worker processes carry approvals, cancels and `attach` between them only through
    PostgreSQL (its relay); on SQLite each would answer only its own turns: one line, exit status 1."""
    scheme = settings.database_url_resolved.split(":", 1)[0].split("+", 1)[0].lower()
    if settings.workers > 1 and scheme != "postgresql":
        print(
            f"Switchboard cannot start: {settings.workers} worker processes need the conversation store on PostgreSQL "
            "(set SWITCHBOARD_DATABASE_URL=postgresql+asyncpg://USER:PASSWORD@HOST:PORT/DB), or serve with one "
            "worker: on SQLite each worker would see only its own answers' approvals, cancels and attach.",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1)


def _listening_socket(host: str, port: int) -> socket.socket:
    """The app's socket, bound before anything starts (as uvicorn would bind it); a port that is
    taken or not allowed is one line on stderr and exit status 1, not a traceback or a log record."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = (
                f"port {port} on {host} is in use (another Switchboard, or another program, listens there); "
                "stop it, or serve on another port with --port or SWITCHBOARD_PORT"
            )
        elif exc.errno == errno.EACCES:
            why = f"this user may not listen on port {port} (ports below 1024 need privileges); pick another port"
        else:
            why = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        print(f"Switchboard cannot start: {why}.", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    return sock


def _exit_now(status: int) -> None:
    """Exit once the app has shut down in order (servers stopped, the store closed, the log
    flushed): tearing down the interpreter's modules (the model library, loading in a thread
    of its own, among them) takes seconds on a busy machine and does nothing useful."""
    from .logs import flush_logs

    flush_logs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def check_config(args: argparse.Namespace) -> int:
    from .config import load_app_config
    from .config.checks import server_warnings

    settings = _settings_or_exit()
    config = load_app_config(settings.defaults_dir, settings.config_dir)
    errors = config.all_errors()
    for error in errors:
        print(f"error: {error}")
    warnings = server_warnings(config.mcp, settings.project_root, os.environ)
    not_started = _start_servers(config.mcp, settings) if args.start else {}
    for name, reason in not_started.items():
        print(f"error: server '{name}' did not start here: {reason}")
    for warning in warnings:
        print(f"warning: {warning}")
    enabled = [name for name, server in config.mcp.servers.items() if server.enabled]
    if args.connect and not errors:
        import asyncio

        asyncio.run(_connect_report(config.mcp, settings, args.timeout))
    broken_servers = len(config.mcp.errors)  # refused entries count too: they are in the files
    broken_models = sum(1 for e in config.errors if e.model or e.field.startswith("models["))
    servers = f"{len(config.mcp.servers) + broken_servers} server(s) ({len(enabled)} enabled"
    servers += f", {broken_servers} broken)" if broken_servers else ")"
    models = f"{len(config.llm.models) + broken_models} model(s)" + (
        f" ({broken_models} broken)" if broken_models else ""
    )
    print(
        f"{servers}, {models}, {len(config.compliance.levels)} compliance level(s); "
        f"{len(errors) + len(not_started)} error(s), {len(warnings)} warning(s)"
    )
    if not_started:
        print(f"{len(not_started)} server(s) did not start: {', '.join(not_started)}")
    return 1 if errors or not_started else 0


def _start_servers(mcp: object, settings: Settings) -> dict[str, str]:
    """Start every enabled stdio server once (logs in LOG_DIR/check-config/servers/): the reason
    of each that does not come up (its exit code and the end of its stderr, or the timeout)."""
    import asyncio

    from .tools.trial import start_once

    statuses = asyncio.run(
        start_once(
            mcp,  # type: ignore[arg-type]
            project_root=settings.project_root,
            log_dir=settings.log_dir / "check-config",
            timeout_s=settings.server_start_timeout_s,
        )
    )
    failed = {}
    for status in statuses:
        if status.status == "ready":
            print(f"server '{status.name}' started ({status.tool_count} tools)")
        else:
            failed[status.name] = status.reason or status.status
    return failed


async def _connect_report(mcp: object, settings: Settings, timeout_s: float) -> None:
    """`check-config --connect`: each enabled server's status and the protocol version it speaks."""
    from .tools import ServerPool  # imports fastmcp (seconds): only when asked to connect

    pool = ServerPool(
        mcp,  # type: ignore[arg-type]
        project_root=settings.project_root,
        log_dir=settings.log_dir / "debug",
        init_timeout_s=timeout_s,
    )
    pool.start()
    try:
        await pool.wait_settled(timeout_s)
        for status in pool.statuses():
            if status.status == "disabled":
                continue
            version = f", protocol {status.protocol_version}" if status.protocol_version else ""
            why = f" ({status.reason})" if status.reason and status.status != "ready" else ""
            print(f"server '{status.name}': {status.status}{version}{why}")
    finally:
        await pool.stop()


def db_upgrade(args: argparse.Namespace) -> int:
    from .errors import StoreUnavailable
    from .store import upgrade
    from .store.engine import describe

    url = Settings().database_url_resolved
    try:
        upgrade(url)
    except StoreUnavailable as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"the conversation store at {describe(url)} is up to date")
    return 0


def chat(args: argparse.Namespace) -> int:
    from .cli.chat import run  # the client's imports (httpx, the event models) only for this command

    return run(args)


def main(argv: list[str] | None = None) -> int:
    set_defaults()  # before any command imports the model library or fastmcp (environment.py)
    parser = argparse.ArgumentParser(prog="switchboard", description="Self-hosted chat with MCP tools")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="serve the app")
    p_serve.add_argument("--host")
    p_serve.add_argument("--port", type=int)
    p_serve.add_argument("--workers", type=int, help="app processes (default 1; SWITCHBOARD_WORKERS)")
    p_serve.set_defaults(func=serve)
    p_check = sub.add_parser("check-config", help="validate every config file")
    p_check.add_argument(
        "--start",
        action="store_true",
        help="also start each enabled stdio server once and say why one does not come up",
    )
    p_check.add_argument(
        "--connect",
        action="store_true",
        help="also connect to each enabled server and show its status and protocol version",
    )
    p_check.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for servers with --connect")
    p_check.set_defaults(func=check_config)
    p_db = sub.add_parser("db", help="the conversation store").add_subparsers(dest="db_command", required=True)
    p_db.add_parser("upgrade", help="apply the store's migrations (SWITCHBOARD_DATABASE_URL)").set_defaults(
        func=db_upgrade
    )
    from .audit.cli import add_parser as add_audit_parser
    from .cli.chat_args import add_parser as add_chat_parser

    add_audit_parser(sub)

    add_chat_parser(sub).set_defaults(func=chat)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
