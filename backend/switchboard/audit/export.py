"""Records out of the log: as they are (JSON lines, each with its `hash`), or as OCSF
API Activity events (class 6003), the record itself under `unmapped`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from ..store.governance.audit_log import AuditQuery, AuditStore

__all__ = ["as_ocsf", "exported", "record_of"]

OCSF_VERSION = "1.3.0"
_ACTIVITY = {"tool_call": 99, "app_call": 99, "user_seen": 1, "oauth_connect": 1, "oauth_disconnect": 4}


def record_of(body: str, hash_: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(body)
    if hash_ is not None:
        record["hash"] = hash_
    return record


def as_ocsf(record: dict[str, Any]) -> dict[str, Any]:
    activity = _ACTIVITY.get(record["kind"], 99)
    outcome = record.get("outcome") or {}
    failed = record.get("decision") in ("deny", "error") or outcome.get("ok") is False
    event: dict[str, Any] = {
        "class_uid": 6003,
        "class_name": "API Activity",
        "category_uid": 6,
        "category_name": "Application Activity",
        "activity_id": activity,
        "activity_name": record["kind"],
        "type_uid": 6003 * 100 + activity,
        "severity_id": 1,
        "status_id": 2 if failed else 1,
        "time": int(datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp() * 1000),
        "metadata": {
            "version": OCSF_VERSION,
            "product": {"name": "Switchboard", "vendor_name": "Switchboard"},
            "uid": record.get("hash"),
            "sequence": record["seq"],
        },
        "api": {
            "operation": record.get("tool") or record["kind"],
            "service": {"name": record.get("server") or "switchboard"},
        },
        "actor": {"user": {"email_addr": record.get("user"), "name": record.get("user")}},
        "unmapped": record,
    }
    if record.get("decision"):
        event["status"] = record["decision"]
    if record.get("duration_ms") is not None:
        event["duration"] = record["duration_ms"]
    return event


async def exported(audit: AuditStore, query: AuditQuery, ocsf: bool = False) -> AsyncIterator[str]:
    """One line per record the query picks, oldest first, read a page at a time."""
    after = query.after if query.after is not None else 0
    while True:
        page = await audit.find_with_hash(AuditQuery(**{**_fields(query), "after": after, "limit": 5000}))
        for seq, body, hash_ in page:
            record = record_of(body, hash_)
            yield json.dumps(as_ocsf(record) if ocsf else record, separators=(",", ":"), ensure_ascii=False)
            after = seq
        if len(page) < 5000:
            return


def _fields(query: AuditQuery) -> dict[str, Any]:
    return {name: getattr(query, name) for name in ("user", "tool", "server", "decision", "kind", "since", "until")}
