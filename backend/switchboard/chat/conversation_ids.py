"""Ids of conversations a client named: each user's names live in a space of their own.

A client may pick a conversation's id (`/api/chat`'s `conversation_id`, `switchboard chat
--conversation`, an incognito chat's). The store keeps such a conversation under
`ConversationIds.scoped(owner, name)`, a keyed hash (HMAC-SHA256 under a key derived from the
app's secret) of the owner's address and the name. Without the secret nobody can compute
another user's ids from their address and a name, and one user's name never lands on another
user's conversation.

Conversations named before the hash was keyed are stored under `legacy_scoped_id`, the same
hash without a key; they are still found by their owner (`candidates`), never by anyone else
(every look-up checks the owner)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["ConversationIds", "id_key", "legacy_scoped_id"]


def _as_id(digest: bytes) -> str:
    return "u" + base64.urlsafe_b64encode(digest[:18]).decode()  # 25 characters: a valid conversation id


def id_key(secret: bytes | str) -> bytes:
    """The key of named conversations' ids, derived from the app's secret (the same on every process)."""
    secret = secret.encode() if isinstance(secret, str) else secret
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"switchboard", info=b"conversation ids").derive(secret)


def legacy_scoped_id(owner: str, name: str) -> str:
    """The id a named conversation was stored under before ids were keyed (found by its owner only)."""
    return _as_id(hashlib.sha256(f"{owner}\x00{name}".encode()).digest())


class ConversationIds:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)  # tests: one process, any key

    def scoped(self, owner: str, name: str) -> str:
        """The store's id of the conversation `owner` named `name`."""
        return _as_id(hmac.new(self._key, f"{owner}\x00{name}".encode(), hashlib.sha256).digest())

    def candidates(self, owner: str, name: str) -> tuple[str, str, str]:
        """Where a conversation a client of `owner`'s knows as `name` may be: the id as given (one
        the server made), the keyed id of the name, the unkeyed one of before."""
        return name, self.scoped(owner, name), legacy_scoped_id(owner, name)
