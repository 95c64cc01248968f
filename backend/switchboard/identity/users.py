"""Who is the user, which groups they are in, and whether they administer the host.

`dev` mode: one local user.  `proxy` mode: a reverse proxy authenticates
and sets the identity header; it is trusted only together with the shared
secret in `X-Proxy-Secret` (compared in constant time).  A personal API token
(`Authorization: Bearer sb_...`, verified in `web/authn.py`) names its owner;
`user_for_token` gives that owner's groups.

Groups come from groups.yml, plus (proxy mode) a groups header the proxy
sets, plus an optional HTTP group service (cached; when it fails, it adds no
groups: fail closed).  The address is normalized (stripped, lower-cased) once,
here, so that ownership and group patterns compare the same string.

This is the only module that reads identity headers or groups.yml; the web
layer calls it once per request (`web/authn.py`) and the turn hub once per turn
(`refresh`), so a reload's new groups count from the next request or turn."""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from typing import Protocol

import httpx
from cachetools import TTLCache

from ..config.models import GroupsConfig
from ..errors import Unauthorized
from ..settings import Settings

__all__ = ["Authenticator", "GroupService", "RequestHeaders", "User", "normalize_email"]

log = logging.getLogger("switchboard.identity.users")

PROXY_SECRET_HEADER = "x-proxy-secret"


class RequestHeaders(Protocol):
    """A request's headers with every value of a repeated header (Starlette's `Headers`)."""

    def getlist(self, key: str) -> list[str]: ...


def normalize_email(raw: str) -> str:
    return raw.strip().lower()


@dataclass(frozen=True, slots=True)
class User:
    """A signed-in user as one request or turn sees them: worked out by `Authenticator`."""

    email: str  # normalized (`normalize_email`)
    groups: frozenset[str] = frozenset()
    admin: bool = False
    via_token: bool = False  # identified by a personal API token, not the page's sign-in
    vouched_groups: frozenset[str] = frozenset()  # the proxy's groups header (kept for `refresh`)


class GroupService:
    """Groups from an HTTP service, cached per user for `ttl_s` (at most `max_users` users)."""

    def __init__(
        self, url: str, ttl_s: float, client: httpx.AsyncClient | None = None, max_users: int = 10_000
    ) -> None:
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

    def forget(self) -> None:
        """Ask the service again for everyone (a reload: an administrator says groups changed)."""
        self._cache.clear()


class Authenticator:
    def __init__(self, settings: Settings, groups: GroupsConfig, group_service: GroupService | None = None) -> None:
        self._settings = settings
        self._groups = groups
        if group_service is None and settings.group_service_url:
            group_service = GroupService(settings.group_service_url, settings.group_service_ttl_s)
        self._service = group_service
        if settings.auth_mode == "proxy" and not settings.proxy_secret:
            raise ValueError("SWITCHBOARD_PROXY_SECRET must be set when SWITCHBOARD_AUTH_MODE=proxy")

    def use_groups(self, groups: GroupsConfig) -> None:
        """A reloaded groups.yml: it counts from the next request, turn and catalogue push (and
        the group service is asked again)."""
        self._groups = groups
        if self._service is not None:
            self._service.forget()

    async def _user(self, email: str, vouched: frozenset[str], *, via_token: bool = False) -> User:
        email = normalize_email(email)
        groups = set(self._groups.groups_for(email)) | vouched
        if self._service is not None:
            groups |= set(await self._service.groups_for(email))
        return User(
            email=email,
            groups=frozenset(groups),
            admin=self._groups.admin_group in groups,
            via_token=via_token,
            vouched_groups=vouched,
        )

    async def user_for_token(self, email: str) -> User:
        """The owner of a personal API token: groups from groups.yml and the group
        service only (no proxy stands behind such a request to vouch for a groups header)."""
        return await self._user(email, frozenset(), via_token=True)

    async def refresh(self, user: User) -> User:
        """The same identity with its groups and admin worked out again from the current
        configuration (a socket's user at each turn and catalogue push)."""
        return await self._user(user.email, user.vouched_groups, via_token=user.via_token)

    async def identify(self, headers: RequestHeaders) -> User:
        """The user behind a request's headers (lower-case names)."""
        if self._settings.auth_mode == "dev":
            return await self._user(self._settings.dev_user, frozenset())
        secret = self._settings.proxy_secret
        assert secret is not None
        sent = _single(headers, PROXY_SECRET_HEADER)
        if not hmac.compare_digest(sent.encode(), secret.get_secret_value().encode()):
            raise Unauthorized("the request did not come through the trusted proxy")
        email = _single(headers, self._settings.auth_header).strip()
        if not email or len(email) > 320 or "," in email:
            raise Unauthorized("no signed-in user")
        vouched: frozenset[str] = frozenset()
        if self._settings.groups_header:
            raw = _single(headers, self._settings.groups_header)
            vouched = frozenset(g.strip() for g in raw.split(",") if g.strip())
        return await self._user(email, vouched)


def _single(headers: RequestHeaders, name: str) -> str:
    """The header's one value ("" when absent). Two copies mean someone between the
    proxy and the app added one: which is the proxy's is unknowable, so refuse."""
    values = headers.getlist(name.lower())
    if len(values) > 1:
        raise Unauthorized(
            f"the request carries the {name} header more than once",
            action="Check the reverse proxy: it must replace this header, not add to it.",
        )
    return values[0] if values else ""
