"""Command line: `switchboard serve`, `switchboard check-config`, `switchboard db upgrade`,
`switchboard chat` (a terminal client, `cli_chat.py`)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from .settings import Settings  # noqa: E402


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _settings_or_exit(**overrides: object) -> Settings:
    """The settings, or one line that names every bad setting and exit status 1."""
    from pydantic import ValidationError

    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"SWITCHBOARD_{'_'.join(str(part) for part in error['loc']).upper()}: {error['msg']}" for error in exc.errors()
        )  # the value itself is not repeated: it may be a secret
        print(f"Switchboard cannot start: bad setting(s): {problems}", file=sys.stderr)
        raise SystemExit(1) from None


def _share_metrics(settings: Settings) -> None:
    """Worker processes write their metrics to one folder, which `/metrics` sums (any worker may
    answer the scrape). The folder is emptied first: counts of an earlier run must not add up."""
    import shutil

    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR") or str(settings.data_dir / "metrics")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    from .web.boot import STARTUP_FAILURE, booting_app

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers)) if v is not None}
    settings = _settings_or_exit(**overrides)
    if settings.auth_mode == "dev" and not _loopback(settings.host):
        print(
            f"WARNING: dev auth mode serves every visitor as {settings.dev_user} on {settings.host}. "
            "Use SWITCHBOARD_AUTH_MODE=proxy behind an authenticating proxy for anything but local use.",
            file=sys.stderr,
        )
    print(
        f"Switchboard on http://{settings.host}:{settings.port}  (logs: {settings.log_dir / 'app.jsonl'}"
        + (f", {settings.workers} worker processes)" if settings.workers > 1 else ")"),
        flush=True,
    )
    options = {"host": settings.host, "port": settings.port, "log_level": "warning", "ws": "websockets-sansio"}
    if settings.workers > 1:
        from uvicorn.supervisors import Multiprocess

        # Each worker is a fresh process that reads its settings from the environment. A worker
        # whose app cannot be built exits with STARTUP_FAILURE, and the supervisor then stops.
        os.environ.update({f"SWITCHBOARD_{k.upper()}": str(v) for k, v in overrides.items()})
        _share_metrics(settings)
        config = uvicorn.Config("switchboard.web.boot:from_environment", factory=True, workers=settings.workers, **options)
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
        return 1 if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes) else 0
    server: uvicorn.Server | None = None

    def stop(reason: str) -> None:  # the app cannot be built: stop serving, then exit non-zero
        assert server is not None
        server.should_exit = True

    app = booting_app(settings, on_failure=stop)
    server = uvicorn.Server(uvicorn.Config(app, **options))
    server.run()
    if app.error is not None or not server.started:
        return 1
    return 0


def check_config(args: argparse.Namespace) -> int:
    from .config import load_app_config
    from .config.checks import server_warnings

    settings = _settings_or_exit()
    config = load_app_config(settings.defaults_dir, settings.config_dir)
    errors = config.all_errors()
    for error in errors:
        print(f"error: {error}")
    warnings = server_warnings(config.mcp, settings.project_root, os.environ)
    for warning in warnings:
        print(f"warning: {warning}")
    enabled = [name for name, server in config.mcp.servers.items() if server.enabled]
    print(
        f"{len(config.mcp.servers)} server(s) ({len(enabled)} enabled), {len(config.llm.models)} model(s), "
        f"{len(config.compliance.levels)} compliance level(s); {len(errors)} error(s), {len(warnings)} warning(s)"
    )
    return 1 if errors else 0


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="switchboard", description="Self-hosted chat with MCP tools")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="serve the app")
    p_serve.add_argument("--host")
    p_serve.add_argument("--port", type=int)
    p_serve.add_argument("--workers", type=int, help="app processes (default 1; SWITCHBOARD_WORKERS)")
    p_serve.set_defaults(func=serve)
    p_check = sub.add_parser("check-config", help="validate every config file")
    p_check.set_defaults(func=check_config)
    p_db = sub.add_parser("db", help="the conversation store").add_subparsers(dest="db_command", required=True)
    p_db.add_parser("upgrade", help="apply the store's migrations (SWITCHBOARD_DATABASE_URL)").set_defaults(func=db_upgrade)
    from .cli_chat import add_parser as add_chat_parser

    add_chat_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
