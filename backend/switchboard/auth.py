"""Who is the user, and which groups they are in.

`dev` mode: one local user.  `proxy` mode: a reverse proxy authenticates
and sets the identity header; it is trusted only together with the shared
secret in `X-Proxy-Secret` (compared in constant time)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from .config.models import GroupsConfig
from .errors import Unauthorized
from .settings import Settings

__all__ = ["Authenticator", "User"]

PROXY_SECRET_HEADER = "x-proxy-secret"


@dataclass(frozen=True, slots=True)
class User:
    email: str
    groups: frozenset[str]

    @property
    def group_set(self) -> set[str]:
        return set(self.groups)


class Authenticator:
    def __init__(self, settings: Settings, groups: GroupsConfig) -> None:
        self._settings = settings
        self._groups = groups
        if settings.auth_mode == "proxy" and not settings.proxy_secret:
            raise ValueError("SWITCHBOARD_PROXY_SECRET must be set when SWITCHBOARD_AUTH_MODE=proxy")

    def _user(self, email: str) -> User:
        return User(email=email, groups=frozenset(self._groups.groups_for(email)))

    def identify(self, headers: Mapping[str, str]) -> User:
        """The user behind a request's headers (lower-case names)."""
        if self._settings.auth_mode == "dev":
            return self._user(self._settings.dev_user)
        secret = self._settings.proxy_secret
        assert secret is not None
        sent = headers.get(PROXY_SECRET_HEADER, "")
        if not hmac.compare_digest(sent.encode(), secret.get_secret_value().encode()):
            raise Unauthorized("the request did not come through the trusted proxy")
        email = headers.get(self._settings.auth_header.lower(), "").strip()
        if not email or len(email) > 320:
            raise Unauthorized("no signed-in user")
        return self._user(email)

    def is_admin(self, user: User) -> bool:
        return self._groups.admin_group in user.groups
