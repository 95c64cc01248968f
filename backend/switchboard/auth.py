"""Who is the user, and which groups they are in.

`dev` mode: one local user.  `proxy` mode: a reverse proxy authenticates
and sets the identity header; it is trusted only together with the shared
secret in `X-Proxy-Secret` (compared in constant time).  API routes also take
a personal API token (`Authorization: Bearer sb_...`, checked in `web/deps.py`);
its owner's groups come from `user_for_token`.

Groups come from groups.yml, plus (proxy mode) a groups header the proxy
sets, plus an optional HTTP group service (cached; when it fails, it adds no
groups: fail closed)."""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Protocol

import httpx
from cachetools import TTLCache

from .config.models import GroupsConfig
from .errors import Unauthorized
from .settings import Settings

__all__ = ["Authenticator", "GroupService", "RequestHeaders", "User"]

log = logging.getLogger("switchboard.auth")

PROXY_SECRET_HEADER = "x-proxy-secret"


class RequestHeaders(Protocol):
    """A request's headers with every value of a repeated header (Starlette's `Headers`)."""

    def getlist(self, key: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class User:
    email: str
    groups: frozenset[str]

    @property
    def group_set(self) -> set[str]:
        return set(self.groups)


class GroupService:
    """Groups from an HTTP service, cached per user for `ttl_s` (at most `max_users` users)."""

    def __init__(self, url: str, ttl_s: float, client: httpx.AsyncClient | None = None, max_users: int = 10_000) -> None:
        self._url = url
        self._client = client or httpx.AsyncClient(timeout=5.0)
        self._cache: TTLCache[str, list[str]] = TTLCache(maxsize=max_users, ttl=ttl_s)

    async def groups_for(self, email: str) -> list[str]:
        cached = self._cache.get(email)
        if cached is not None:
            return cached
        try:
            response = await self._client.get(self._url, params={"user": email})
            response.raise_for_status()
            groups = response.json()
            if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
                raise ValueError("the group service must answer a JSON list of strings")
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("group service failed for %s: %s", email, exc, extra={"event": "group_service_failed"})
            return []  # fail closed: no extra groups, and nothing cached
        self._cache[email] = groups
        return groups


class Authenticator:
    def __init__(self, settings: Settings, groups: GroupsConfig, group_service: GroupService | None = None) -> None:
        self._settings = settings
        self._groups = groups
        if group_service is None and settings.group_service_url:
            group_service = GroupService(settings.group_service_url, settings.group_service_ttl_s)
        self._service = group_service
        if settings.auth_mode == "proxy" and not settings.proxy_secret:
            raise ValueError("SWITCHBOARD_PROXY_SECRET must be set when SWITCHBOARD_AUTH_MODE=proxy")

    async def _user(self, email: str, header_groups: list[str]) -> User:
        groups = set(self._groups.groups_for(email)) | set(header_groups)
        if self._service is not None:
            groups |= set(await self._service.groups_for(email))
        return User(email=email, groups=frozenset(groups))

    async def user_for_token(self, email: str) -> User:
        """The owner of a personal API token: groups from groups.yml and the group
        service only (no proxy stands behind such a request to vouch for a groups header)."""
        return await self._user(email, [])

    async def identify(self, headers: RequestHeaders) -> User:
        """The user behind a request's headers (lower-case names)."""
        if self._settings.auth_mode == "dev":
            return await self._user(self._settings.dev_user, [])
        secret = self._settings.proxy_secret
        assert secret is not None
        sent = _single(headers, PROXY_SECRET_HEADER)
        if not hmac.compare_digest(sent.encode(), secret.get_secret_value().encode()):
            raise Unauthorized("the request did not come through the trusted proxy")
        email = _single(headers, self._settings.auth_header).strip()
        if not email or len(email) > 320 or "," in email:
            raise Unauthorized("no signed-in user")
        header_groups: list[str] = []
        if self._settings.groups_header:
            raw = _single(headers, self._settings.groups_header)
            header_groups = [g.strip() for g in raw.split(",") if g.strip()]
        return await self._user(email, header_groups)

    def with_groups(self, groups: GroupsConfig) -> Authenticator:
        return Authenticator(self._settings, groups, self._service)

    def is_admin(self, user: User) -> bool:
        return self._groups.admin_group in user.groups


def _single(headers: RequestHeaders, name: str) -> str:
    """The header's one value ("" when absent). Two copies mean someone between the
    proxy and the app added one: which is the proxy's is unknowable, so refuse."""
    values = headers.getlist(name.lower())
    if len(values) > 1:
        raise Unauthorized(f"the request carries the {name} header more than once",
                           action="Check the reverse proxy: it must replace this header, not add to it.")  # fmt: skip
    return values[0] if values else ""
