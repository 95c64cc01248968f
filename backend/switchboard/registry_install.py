"""Installing a registry entry: `{"name", "from_registry", "variables"}` on `POST /api/servers` (a
user's own server) and `POST /api/admin/servers` (a deployment server). The entry's latest active
version is looked up, its install plan made (registries/plan.py: remotes first, packages for
administrators only) and screened by the endpoint policy with DNS; what comes back is the server's
mcp.json entry without its secret values, and those values apart, for the vault. Nothing is
stored here: a refusal at any step leaves nothing installed."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config.loader import SERVER_NAME
from .errors import BadRequest
from .registries import InstallPlan, plan_install, screen_plan

if TYPE_CHECKING:
    from .services import Services

__all__ = ["INSTALL_FIELDS", "Install", "planned"]

INSTALL_FIELDS = ("name", "from_registry", "variables")
MAX_ENTRY_NAME = 200  # server.json's limit


@dataclass(frozen=True)
class Install:
    name: str  # the name the server gets here
    plan: InstallPlan
    entry: dict[str, Any]  # the plan's mcp.json fields without the secret values
    sealed: dict[str, dict[str, str]]  # "headers" / "env": the secret values, for the vault


def _field(field: str, message: str) -> BadRequest:
    return BadRequest(f"field '{field}': {message}", action="Correct the field and try again; nothing was installed.")


async def planned(
    services: Services, body: Any, *, is_admin: bool, max_name: int = 64, extra: Collection[str] = ()
) -> Install:
    """The install `body` asks for, planned and screened; BadRequest (BadRegistryData for the
    registry's data), Forbidden (a package, for a user) or NotFound when it cannot be."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object: name, from_registry, variables")
    allowed_fields = (*INSTALL_FIELDS, *extra)
    unknown = sorted(set(body) - set(allowed_fields))
    if unknown:
        raise _field(unknown[0], f"unknown field (an install takes {', '.join(allowed_fields)})")
    name, source, variables = body.get("name"), body.get("from_registry"), body.get("variables") or {}
    if not isinstance(name, str) or len(name) > max_name or not SERVER_NAME.fullmatch(name):
        raise _field("name", f"server names may use letters, digits, '_', '.', '-' (at most {max_name})")
    if not isinstance(source, str) or not 0 < len(source) <= MAX_ENTRY_NAME:
        raise _field("from_registry", "the registry entry's name is needed (as the registry lists it)")
    if not isinstance(variables, dict):
        raise _field("variables", "must be an object of names to values")
    allowed = services.settings.user_server_hosts
    plan = plan_install(await services.registries.entry(source), variables, is_admin, allowed_hosts=allowed)
    await screen_plan(plan, allowed_hosts=allowed)
    entry = {k: dict(v) if isinstance(v, dict) else v for k, v in plan.fields.items()}
    sealed: dict[str, dict[str, str]] = {}
    for path in plan.secrets:
        part, _, key = path.partition(".")
        sealed.setdefault(part, {})[key] = entry[part].pop(key)
    for part in ("headers", "env"):
        if part in entry and not entry[part]:
            del entry[part]
    return Install(name, plan, entry, sealed)
