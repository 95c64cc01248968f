"""Authentication, found once per request: Starlette's `AuthenticationMiddleware`
with one backend for HTTP and websocket scopes alike.

The backend puts the request's `User` (auth.py: normalized address, groups,
admin) in `scope["user"]`, or an `Anonymous` that carries why there is none.
Routes and doors take the user from there (`deps.current_user`, `deps.page_user`,
`user_of`) and never look at identity headers themselves
(tests/unit/test_identity_door.py).

- `Authorization: Bearer sb_...`: a personal API token names its owner (in
  proxy mode without the proxy's secret).  A wrong or revoked token is refused,
  never passed over to another identity.  In dev mode any other bearer value is
  refused as well; in proxy mode it is the proxy's own and is left alone.
- Otherwise the page's sign-in: the dev user, or the proxy's identity header
  with the proxy's secret.
- `Authorization: Bearer <SWITCHBOARD_METRICS_TOKEN>` is a `Scraper`: it may read
  `/metrics` and nothing else.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from starlette.authentication import AuthCredentials, AuthenticationBackend
from starlette.requests import HTTPConnection

from ..errors import StoreUnavailable, SwitchboardError, Unauthorized
from ..identity.users import User
from ..services import Services
from ..store.tokens import TOKEN_PREFIX, TokenStore

__all__ = ["TOKEN_HELP", "Anonymous", "Scraper", "SwitchboardAuthBackend", "is_scraper", "token_store", "user_of"]

TOKEN_HELP = (
    "Make a personal API token in Switchboard (POST /api/tokens while signed in to the page) "
    "and send it as 'Authorization: Bearer sb_...'."
)
_API_PATHS = ("/api/", "/v1/")  # where a refusal tells the client how to use a token
_UNAUTHENTICATED = ("/static/", "/healthz")  # nothing there depends on who asks


@dataclass(frozen=True, slots=True)
class Anonymous:
    """No user: `why` is the error a route that needs one raises."""

    why: SwitchboardError
    is_authenticated = False


@dataclass(frozen=True, slots=True)
class Scraper:
    """The holder of the metrics token: it may read `/metrics`, and nothing else."""

    is_authenticated = True


class SwitchboardAuthBackend(AuthenticationBackend):
    # Starlette types the user as its BaseUser class; ours (auth.User) is the same shape without
    # the import, since only web/ may import starlette.
    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, User | Anonymous | Scraper]:  # type: ignore[override]
        if conn.scope["type"] == "http" and conn.scope["path"].startswith(_UNAUTHENTICATED):
            return AuthCredentials(), Anonymous(Unauthorized("no identity is worked out here"))
        services: Services = conn.app.state.services
        if _holds_metrics_token(conn, services):
            return AuthCredentials(["metrics"]), Scraper()
        try:
            user = await _identify(conn, services)
        except SwitchboardError as exc:
            return AuthCredentials(), Anonymous(exc)
        services.users_seen.note(user, services.config.groups, services.store)  # the admin console's list
        services.audit.user_seen(user.email)  # (once per deployment; a set lookup after the first)
        return AuthCredentials(["authenticated"]), user


def _holds_metrics_token(conn: HTTPConnection, services: Services) -> bool:
    token = services.settings.metrics_token
    values = conn.headers.getlist("authorization")
    if token is None or len(values) != 1 or not values[0].strip().lower().startswith("bearer "):
        return False
    return hmac.compare_digest(values[0].strip()[7:].strip().encode(), token.get_secret_value().encode())


async def _identify(conn: HTTPConnection, services: Services) -> User:
    token = _bearer_token(conn, proxy=services.settings.auth_mode == "proxy")
    if token is None:
        try:
            return await services.auth.identify(conn.headers)
        except Unauthorized as exc:
            if conn.scope["path"].startswith(_API_PATHS):
                raise Unauthorized(exc.message, action=exc.action or TOKEN_HELP) from None
            raise
    found = await _token_store(services).verify(token) if token.startswith(TOKEN_PREFIX) else None
    if found is None:
        raise Unauthorized("this API token is not valid (wrong, or revoked)", action=TOKEN_HELP)
    return await services.auth.user_for_token(found.owner)


def _bearer_token(conn: HTTPConnection, *, proxy: bool) -> str | None:
    """The bearer token sent, if it is ours to check: an `sb_...` token always; in dev mode
    any bearer value (no proxy stands in front whose own credentials it could be)."""
    values = conn.headers.getlist("authorization")
    tokens = [v.strip().partition(" ")[2].strip() for v in values if v.strip().lower().startswith("bearer ")]
    tokens = [t for t in tokens if t.startswith(TOKEN_PREFIX) or not proxy]
    if len(tokens) > 1:
        raise Unauthorized("the request carries more than one API token", action=TOKEN_HELP)
    return tokens[0] if tokens else None


def _token_store(services: Services) -> TokenStore:
    if services.store_error is not None:
        raise StoreUnavailable(f"API tokens cannot be used now: {services.store_error}")
    return TokenStore(services.store)


def token_store(conn: HTTPConnection) -> TokenStore:
    return _token_store(conn.app.state.services)


def user_of(conn: HTTPConnection) -> User:
    """The connection's user, as the backend found it; raises why there is none."""
    user = conn.scope.get("user")
    if isinstance(user, User):
        return user
    if isinstance(user, Scraper):
        raise Unauthorized("the metrics token opens /metrics only", action=TOKEN_HELP)
    raise user.why if isinstance(user, Anonymous) else Unauthorized("no signed-in user")


def is_scraper(conn: HTTPConnection) -> bool:
    return isinstance(conn.scope.get("user"), Scraper)
