"""Request-scoped helpers: the services, the signed-in user."""

from __future__ import annotations

from fastapi import Request

from ..auth import User
from ..services import Services

__all__ = ["current_user", "services_of"]


def services_of(request: Request) -> Services:
    return request.app.state.services


async def current_user(request: Request) -> User:
    return await services_of(request).auth.identify(request.headers)
