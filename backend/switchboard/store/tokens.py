"""Personal API tokens in the store: `sb_<id>_<secret>`, shown once when made.

Only the SHA-256 of the secret part is kept; a token is found by its id and its
secret compared in constant time, so neither the database nor a timing
difference tells which secret would match."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, text, update

from ..errors import BadRequest
from .models import api_tokens
from .repo import ConversationStore

__all__ = ["TOKEN_PREFIX", "ApiToken", "NewToken", "TokenStore"]

TOKEN_PREFIX = "sb_"
MAX_TOKENS_PER_USER = 50
_TOUCH_EVERY = timedelta(minutes=1)  # last_used_at is kept to the minute: one write per token per minute at most


@dataclass(frozen=True, slots=True)
class ApiToken:
    id: str
    owner: str
    name: str
    created_at: datetime
    last_used_at: datetime | None


@dataclass(frozen=True, slots=True)
class NewToken:
    token: ApiToken
    secret: str  # the whole `sb_...` text: shown once, never stored


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _token(row: Any) -> ApiToken:
    return ApiToken(
        id=row["id"],
        owner=row["owner"],
        name=row["name"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
    )


def split_token(text: str) -> tuple[str, str] | None:
    """(id, secret) of a well-formed `sb_<id>_<secret>`, else None."""
    if not text.startswith(TOKEN_PREFIX):
        return None
    token_id, sep, secret = text[len(TOKEN_PREFIX) :].partition("_")
    if not sep or not token_id or not secret or len(token_id) > 32 or len(secret) > 200:
        return None
    return token_id, secret


class TokenStore:
    """The `api_tokens` table, through the conversation store's engine and error translation."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def create(self, owner: str, name: str) -> NewToken:
        """A new token, unless the owner has MAX_TOKENS_PER_USER already. The count and the insert
        are one transaction that holds the owner's lock (SQLite: the one writer, BEGIN IMMEDIATE;
        Postgres: a transaction-scoped advisory lock on the owner), so concurrent creates queue
        and cannot pass the cap together."""
        token_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        row = {
            "id": token_id,
            "owner": owner,
            "name": name,
            "secret_hash": _hash(secret),
            "created_at": datetime.now(UTC),
            "last_used_at": None,
        }

        def work(conn: Connection) -> None:
            if conn.dialect.name == "postgresql":
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": f"api_tokens:{owner}"}
                )
            count = conn.execute(
                select(func.count()).select_from(api_tokens).where(api_tokens.c.owner == owner)
            ).scalar_one()
            if count >= MAX_TOKENS_PER_USER:
                raise BadRequest(
                    f"you have {count} API tokens already, the limit is {MAX_TOKENS_PER_USER}",
                    action="Revoke tokens you no longer use first.",
                )
            conn.execute(insert(api_tokens).values(**row))

        await self._store.transaction("save the new API token", work)
        return NewToken(_token(row), f"{TOKEN_PREFIX}{token_id}_{secret}")

    async def list(self, owner: str) -> list[ApiToken]:
        stmt = select(api_tokens).where(api_tokens.c.owner == owner).order_by(api_tokens.c.created_at.desc())
        return await self._store.read(
            "list your API tokens", lambda conn: [_token(r) for r in conn.execute(stmt).mappings()]
        )

    async def revoke(self, owner: str, token_id: str) -> bool:
        """Delete one of the owner's tokens; False when the owner has no such token."""
        stmt = delete(api_tokens).where(api_tokens.c.id == token_id, api_tokens.c.owner == owner)
        return await self._store.transaction(
            "revoke the API token", lambda conn: conn.execute(stmt).rowcount > 0, single=True
        )

    async def verify(self, text: str) -> ApiToken | None:
        """The token `text` stands for, or None (malformed, unknown, revoked or a wrong secret)."""
        parts = split_token(text)
        if parts is None:
            return None
        token_id, secret = parts
        found = select(api_tokens).where(api_tokens.c.id == token_id)
        row = await self._store.read("check the API token", lambda conn: conn.execute(found).mappings().first())
        if row is None or not hmac.compare_digest(_hash(secret), row["secret_hash"]):
            return None
        token = _token(row)
        now = datetime.now(UTC)
        if token.last_used_at is None or now - token.last_used_at >= _TOUCH_EVERY:
            touch = update(api_tokens).where(api_tokens.c.id == token_id).values(last_used_at=now)
            await self._store.transaction("note the API token's use", lambda conn: conn.execute(touch), single=True)
        return token
