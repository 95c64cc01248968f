"""Request-scoped helpers: the services, the signed-in user.

Who a request is: on `/api/...` and `/v1/...` a personal API token
(`Authorization: Bearer sb_...`) names its owner, in proxy mode without the
proxy's secret; a wrong or revoked token is refused, never passed over.
Everywhere else, and for managing tokens, only the page's sign-in counts."""

from __future__ import annotations

from fastapi import Request

from ..auth import User
from ..errors import Forbidden, StoreUnavailable, Unauthorized
from ..services import Services
from ..store.tokens import TOKEN_PREFIX, TokenStore

__all__ = ["TOKEN_HELP", "bearer_token", "current_user", "page_user", "services_of", "token_store"]

TOKEN_HELP = ("Make a personal API token in Switchboard (POST /api/tokens while signed in to the page) "
              "and send it as 'Authorization: Bearer sb_...'.")  # fmt: skip
_TOKEN_PATHS = ("/api/", "/v1/")


def services_of(request: Request) -> Services:
    return request.app.state.services


def bearer_token(request: Request) -> str | None:
    """The personal API token sent (`Authorization: Bearer sb_...`), if any.  Other
    Authorization values (a proxy's own credentials) are not ours and are left alone."""
    values = request.headers.getlist("authorization")
    tokens = [v.strip().partition(" ")[2].strip() for v in values if v.strip().lower().startswith("bearer ")]
    tokens = [t for t in tokens if t.startswith(TOKEN_PREFIX)]
    if len(tokens) > 1:
        raise Unauthorized("the request carries more than one API token", action=TOKEN_HELP)
    return tokens[0] if tokens else None


async def current_user(request: Request) -> User:
    services = services_of(request)
    if not request.url.path.startswith(_TOKEN_PATHS):
        return await services.auth.identify(request.headers)
    token = bearer_token(request)
    if token is None:
        try:
            return await services.auth.identify(request.headers)
        except Unauthorized as exc:
            raise Unauthorized(exc.message, action=exc.action or TOKEN_HELP) from None
    found = await token_store(request).verify(token)
    if found is None:
        raise Unauthorized("this API token is not valid (wrong, or revoked)", action=TOKEN_HELP)
    return await services.auth.user_for_token(found.owner)


def token_store(request: Request) -> TokenStore:
    services = services_of(request)
    if services.store_error is not None:
        raise StoreUnavailable(f"API tokens cannot be used now: {services.store_error}")
    return TokenStore(services.store)


async def page_user(request: Request) -> User:
    """The page's signed-in user; an API token is not enough (a leaked one cannot mint more)."""
    if bearer_token(request) is not None:
        raise Forbidden("API tokens cannot manage API tokens", action="Manage tokens while signed in to the page.")
    return await services_of(request).auth.identify(request.headers)
