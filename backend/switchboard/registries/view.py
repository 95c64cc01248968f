"""An entry as the page and the API show it: what it is, how it connects, and what installing
it asks for (structured fields, never a registry's free text as markup)."""

from __future__ import annotations

from typing import Any

from .entries import RegistryEntry
from .needs import package_needs, remote_needs

__all__ = ["describe", "offered_to"]

SUPPORTED_PACKAGES = {"npm": "npx", "pypi": "uvx", "oci": "docker"}


def offered_to(entry: RegistryEntry, is_admin: bool) -> bool:
    """Users see entries they could install (with a remote); administrators see every entry."""
    return is_admin or bool(entry.server.remotes)


def describe(entry: RegistryEntry, is_admin: bool) -> dict[str, Any]:
    server = entry.server
    remotes = [
        {
            "transport": "sse" if remote.type == "sse" else "http",
            "url": remote.url,
            "needs": [need.as_dict() for need in remote_needs(remote)],
        }
        for remote in server.remotes
    ]
    packages = [
        {
            "registry_type": package.registryType,
            "identifier": package.identifier,
            "version": package.version,
            "runtime": SUPPORTED_PACKAGES.get(package.registryType),
            "transport": package.transport.type,
            "supported": package.registryType in SUPPORTED_PACKAGES and package.transport.type == "stdio",
            "needs": [need.as_dict() for need in package_needs(package)],
        }
        for package in server.packages
    ]
    first = remotes[0]["needs"] if remotes else (packages[0]["needs"] if packages and is_admin else [])
    return {
        "name": server.name,
        "title": server.title,
        "description": server.description,
        "version": server.version,
        "registry": entry.registry,
        "website_url": server.websiteUrl,
        "transports": entry.transports if is_admin else [t for t in entry.transports if t != "stdio"],
        "remotes": remotes,
        "packages": packages if is_admin else [],
        "needs": first,  # what installing it asks (its first remote, else for administrators its first package)
        "installable_by_you": bool(remotes) or (is_admin and any(p["supported"] for p in packages)),
    }
