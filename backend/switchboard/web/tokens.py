"""Personal API tokens over HTTP: make one (its text is shown once), list, revoke.

These routes take the page's sign-in only, never a token: a leaked token
cannot make more tokens or hide itself."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field

from ..errors import NotFound
from ..identity.users import User
from ..store.tokens import ApiToken
from .deps import page_user, token_store

__all__ = ["router"]

router = APIRouter(prefix="/api/tokens", tags=["tokens"])
PageUserDep = Annotated[User, Depends(page_user)]


class TokenRequest(BaseModel):
    name: str = Field(min_length=1, max_length=200, description="what the token is for, e.g. 'laptop script'")


class TokenInfo(BaseModel):
    id: str
    name: str
    created_at: datetime
    last_used_at: datetime | None = None

    @classmethod
    def of(cls, token: ApiToken) -> TokenInfo:
        return cls(id=token.id, name=token.name, created_at=token.created_at, last_used_at=token.last_used_at)


class NewTokenInfo(BaseModel):
    id: str
    name: str
    token: str = Field(description="the token itself (`sb_...`): shown this once, keep it secret")
    created_at: datetime


class TokenList(BaseModel):
    tokens: list[TokenInfo]


@router.post("", status_code=201)
async def create_token(request: Request, user: PageUserDep, body: TokenRequest) -> NewTokenInfo:
    """A new token for the signed-in user. Send it as `Authorization: Bearer sb_...`."""
    made = await token_store(request).create(user.email, " ".join(body.name.split()))
    return NewTokenInfo(id=made.token.id, name=made.token.name, token=made.secret, created_at=made.token.created_at)


@router.get("")
async def list_tokens(request: Request, user: PageUserDep) -> TokenList:
    """The caller's tokens, newest first, without their secrets."""
    return TokenList(tokens=[TokenInfo.of(t) for t in await token_store(request).list(user.email)])


@router.delete("/{token_id}", status_code=204)
async def revoke_token(request: Request, user: PageUserDep, token_id: str) -> Response:
    if not await token_store(request).revoke(user.email, token_id):
        raise NotFound("you have no API token with this id", action="List your tokens with GET /api/tokens.")
    return Response(status_code=204)
