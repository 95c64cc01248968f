"""MCP registries (API v0.1, `server.json`): a cached client for the registries the operator lists
(`SWITCHBOARD_REGISTRY_URLS`), what their entries need, and the install plan an entry makes."""

from .catalogue import Listing, RegistryCatalogue, RegistryState
from .client import Limits, RegistryClient, RegistryUnavailable
from .entries import BadRegistryData, Need, RegistryEntry, parse_entry
from .plan import InstallPlan, plan_install, screen_plan
from .view import describe, offered_to

__all__ = [
    "BadRegistryData",
    "InstallPlan",
    "Limits",
    "Listing",
    "Need",
    "RegistryCatalogue",
    "RegistryClient",
    "RegistryEntry",
    "RegistryState",
    "RegistryUnavailable",
    "describe",
    "offered_to",
    "parse_entry",
    "plan_install",
    "screen_plan",
]
