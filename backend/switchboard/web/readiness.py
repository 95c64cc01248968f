"""What `/readyz` and the page say about readiness and broken config files.

Anyone gets the overall status, counts and, for a broken config file, its name and the
line; an administrator also gets every server's status and reason and every config error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request

from ..errors import ConfigError, SwitchboardError
from ..identity.access import Access
from ..services import Services
from .authn import user_of
from .deps import services_of

__all__ = ["config_problems", "is_admin_request", "readiness_report"]

_NOTE = "The site's configuration has errors, so some tools or models may be missing; an administrator can see why."


async def is_admin_request(request: Request) -> bool:
    """Whether the request carries an administrator's identity (no identity: not an admin)."""
    try:
        user = user_of(request)
    except SwitchboardError:
        return False
    return Access(user).allowed("administer")


def _public(error: ConfigError, root: Path) -> str:
    """The error with the file named relative to the project (no absolute paths to strangers)."""
    if not error.file:
        return str(error)
    path = Path(error.file)
    try:
        short = str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        short = f"{path.parent.name}/{path.name}"
    return str(error).replace(error.file, short, 1)


def config_problems(services: Services, admin: bool) -> dict[str, Any]:
    """For `/api/config`: every config error for an admin; a note for others when a whole file is broken."""
    if admin:
        return {"config_errors": [str(e) for e in _current_errors(services)]}
    return {"config_note": _NOTE} if services.config.broken_files() or services.life.refused_reload else {}


def _current_errors(services: Services) -> list[ConfigError]:
    """Every config error, the files as they are now first when a reload was refused for them
    (the running configuration's errors of the same files may be stale)."""
    refused = services.life.refused_reload
    files = {e.file for e in refused}
    return [*refused, *(e for e in services.config.all_errors() if e.file not in files)]


async def readiness_report(request: Request) -> tuple[dict[str, Any], int]:
    services = services_of(request)
    admin = await is_admin_request(request)
    readiness = services.pool.readiness()
    broken = services.config.broken_files()
    refused = services.life.refused_reload
    root = services.settings.project_root
    reasons = []
    if refused:  # the files as they are now, not as they were when the running configuration loaded
        reasons.append(
            "the last config reload was refused, so the configuration loaded before still runs: "
            + "; ".join(_public(e, root) for e in refused)
        )
        broken = [e for e in broken if e.file not in {r.file for r in refused}]
    if broken:
        reasons.append("config file(s) could not be used: " + "; ".join(_public(e, root) for e in broken))
    if readiness.starting:
        names = f": {', '.join(readiness.starting)}" if admin else ""
        reasons.append(f"{len(readiness.starting)} server(s) still starting{names}")
    if services.store_error:
        reasons.append(f"the conversation store cannot be used: {services.store_error}")
    if readiness.required_not_ready:
        names = f": {', '.join(readiness.required_not_ready)}" if admin else ""
        reasons.append(f"{len(readiness.required_not_ready)} required server(s) not ready{names}")
    # A refused reload leaves a working configuration running: it is reported, not made a 503
    # (a typo must not take every replica out of its load balancer), unless what runs is broken too.
    broken = services.config.broken_files()
    ok = not broken and readiness.ready and not services.store_error
    status = "ready" if ok else "starting" if readiness.starting and not broken else "not_ready"
    body: dict[str, Any] = {
        "status": status,
        "counts": {
            "total": len(readiness.servers),
            "ready": readiness.count("ready"),
            "starting": readiness.count("starting"),
            "failed": readiness.count("failed"),
        },
    }
    if reasons:
        body["reason"] = "; ".join(reasons)
    if admin:
        body["servers"] = {
            s.name: {
                "status": s.status,
                "reason": s.reason,
                "required": s.name in readiness.required,
                **({"stderr_tail": s.stderr_tail, "stderr_log": s.stderr_log} if s.stderr_tail else {}),
            }
            for s in readiness.servers
        }
        body["config_errors"] = [str(e) for e in _current_errors(services)]
    return body, 200 if ok else 503
