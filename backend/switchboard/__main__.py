"""Command line: `switchboard serve`, `switchboard check-config`, `switchboard db upgrade`."""

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


def serve(args: argparse.Namespace) -> int:
    import uvicorn

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port), ("workers", args.workers)) if v is not None}
    settings = Settings(**overrides)
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
        # Each worker is a fresh process that reads its settings from the environment.
        os.environ.update({f"SWITCHBOARD_{k.upper()}": str(v) for k, v in overrides.items()})
        uvicorn.run("switchboard.web.boot:from_environment", factory=True, workers=settings.workers, **options)
    else:
        from .web.boot import booting_app

        uvicorn.run(booting_app(settings), **options)
    return 0


def check_config(args: argparse.Namespace) -> int:
    from .config import load_app_config

    settings = Settings()
    config = load_app_config(settings.defaults_dir, settings.config_dir)
    errors = config.all_errors()
    for error in errors:
        print(f"error: {error}")
    enabled = [name for name, server in config.mcp.servers.items() if server.enabled]
    print(
        f"{len(config.mcp.servers)} server(s) ({len(enabled)} enabled), {len(config.llm.models)} model(s), "
        f"{len(config.compliance.levels)} compliance level(s); {len(errors)} error(s)"
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
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
