"""Request-scoped helpers: the services, and the signed-in user that the
authentication backend (`web/authn.py`) found for the request."""

from __future__ import annotations

from fastapi import Request

from ..errors import Forbidden, Unauthorized
from ..identity.access import Access
from ..identity.users import User
from ..services import Services
from .authn import TOKEN_HELP, is_scraper, token_store, user_of

__all__ = ["TOKEN_HELP", "current_user", "metrics_reader", "page_user", "page_viewer", "services_of", "token_store"]


def services_of(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def current_user(request: Request) -> User:
    """The request's user: the page's sign-in or a personal API token."""
    return user_of(request)


async def page_user(request: Request) -> User:
    """The page's signed-in user; an API token is not enough (a leaked one cannot mint more)."""
    user = user_of(request)
    if user.via_token:
        raise Forbidden("API tokens cannot manage API tokens", action="Manage tokens while signed in to the page.")
    return user


async def page_viewer(request: Request) -> User:
    """Who opens a page: the page's sign-in only (a token is for scripts, not for the page)."""
    user = user_of(request)
    if user.via_token:
        raise Unauthorized("the page needs your sign-in, not an API token")
    return user


async def metrics_reader(request: Request) -> None:
    """`/metrics`: a scraper holding the metrics token, or an administrator."""
    if is_scraper(request):
        return
    if not Access(user_of(request)).allowed("administer"):  # no one signed in: 401
        raise Forbidden(
            "only administrators or a scraper with the metrics token may read /metrics",
            action="Set SWITCHBOARD_METRICS_TOKEN and send it as 'Authorization: Bearer ...'.",
        )
