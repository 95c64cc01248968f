"""`switchboard audit verify|export|key`: the log read straight from the database
(SWITCHBOARD_DATABASE_URL), without the app running."""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from typing import Any

from ..settings import Settings

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    audit = sub.add_parser("audit", help="the audit log").add_subparsers(dest="audit_command", required=True)
    p_verify = audit.add_parser(
        "verify", help="check the chain and its signed checkpoints (exit 1 naming the first bad seq)"
    )
    p_verify.add_argument(
        "--from", dest="from_seq", type=int, default=1, help="start at this seq (trusting the one before)"
    )
    p_verify.add_argument("--public-key", help="the deployment's public key (base64); default: this host's key")
    p_verify.set_defaults(func=_verify)
    p_export = audit.add_parser("export", help="write records out, oldest first, one per line")
    p_export.add_argument("--since", type=_when, help="ISO date or time (UTC unless it says otherwise)")
    p_export.add_argument("--until", type=_when)
    p_export.add_argument("--format", choices=("jsonl", "ocsf"), default="jsonl")
    p_export.set_defaults(func=_export)
    audit.add_parser("key", help="print the public key checkpoints are signed with").set_defaults(func=_key)


def _when(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _private_key(settings: Settings) -> Any:
    from .keys import load_key

    return load_key(settings.audit_key.get_secret_value() if settings.audit_key else None, settings.data_dir)


async def _opened(settings: Settings) -> Any:
    from ..store import open_store
    from ..store.governance.audit_log import AuditStore

    store = await open_store(settings.database_url_resolved)
    return store, AuditStore(store, _private_key(settings))


def _verify(args: argparse.Namespace) -> int:
    from ..errors import SwitchboardError
    from .keys import public_text
    from .verify import verify

    settings = Settings()

    async def run() -> int:
        store, audit = await _opened(settings)
        try:
            verdict = await verify(audit, args.public_key or public_text(_private_key(settings)), args.from_seq)
        finally:
            await store.close()
        if verdict.ok:
            print(
                f"audit log whole: {verdict.checked} record(s) through seq {verdict.last_seq}, {verdict.checkpoints} checkpoint(s)"
            )
            return 0
        print(f"audit log broken at seq {verdict.bad_seq}: {verdict.why}", file=sys.stderr)
        return 1

    try:
        return asyncio.run(run())
    except SwitchboardError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2


def _export(args: argparse.Namespace) -> int:
    from ..store.governance.audit_log import AuditQuery
    from .export import exported

    settings = Settings()

    async def run() -> int:
        store, audit = await _opened(settings)
        try:
            async for line in exported(audit, AuditQuery(since=args.since, until=args.until), args.format == "ocsf"):
                sys.stdout.write(line + "\n")
        finally:
            await store.close()
        return 0

    return asyncio.run(run())


def _key(args: argparse.Namespace) -> int:
    from .keys import public_text

    print(public_text(_private_key(Settings())))
    return 0
