"""Users' own credentials for MCP servers, encrypted at rest.

Fernet (AES-128-CBC + HMAC-SHA256) with a key derived from `SWITCHBOARD_SECRET_KEY`
(HKDF-SHA256), else a random key kept in `<data dir>/credentials.key` (mode 0600).
Each sealed value names its server, user and kind inside the ciphertext, so a row
copied onto another user or server does not open there.  Losing the key only
means users connect again: nothing else depends on it.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Collection
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from .files.signing import load_or_create_key
from .store.credentials import CredentialRecords
from .store.repo import ConversationStore
from .tools.oauth.vault import PendingSignIn

__all__ = ["SecretBox", "StoreVault", "credential_key"]

log = logging.getLogger("switchboard")


def credential_key(secret: str | None, data_dir: Path) -> bytes:
    """A Fernet key: derived from the app's secret when set, else kept in the data dir."""
    if secret:
        raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"switchboard", info=b"mcp credentials").derive(
            secret.encode()
        )
    else:
        raw = load_or_create_key(data_dir / "credentials.key")
    return base64.urlsafe_b64encode(raw)


class SecretBox:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    def seal(self, server: str, user: str, kind: str, value: str) -> str:
        plain = json.dumps({"s": server, "u": user, "k": kind, "v": value})
        return self._fernet.encrypt(plain.encode()).decode()

    def open(self, server: str, user: str, kind: str, sealed: str) -> str | None:
        """The value, or None when it cannot be read here (another key, or another row's value)."""
        try:
            item = json.loads(self._fernet.decrypt(sealed.encode()))
        except (InvalidToken, ValueError):
            log.warning(
                "a stored credential could not be decrypted (was the secret key changed?); the user must connect again",
                extra={"event": "credential_unreadable", "server": server},
            )
            return None
        if (item.get("s"), item.get("u"), item.get("k")) != (server, user, kind):
            log.warning(
                "a stored credential belongs to another row; ignored",
                extra={"event": "credential_mismatch", "server": server},
            )
            return None
        return str(item.get("v"))


class StoreVault:
    """The tools layer's CredentialVault: sealed values in the conversation store's database."""

    def __init__(self, box: SecretBox, store: ConversationStore) -> None:
        self._box = box
        self._records = CredentialRecords(store)

    def use(self, store: ConversationStore) -> None:
        """The store as opened (or down again): the same database, transactions and errors."""
        self._records = CredentialRecords(store)

    def _rows(self) -> CredentialRecords:
        return self._records

    async def get(self, server: str, user: str, kind: str) -> str | None:
        sealed = await self._rows().get(server, user, kind)
        return None if sealed is None else self._box.open(server, user, kind, sealed)

    async def put(self, server: str, user: str, kind: str, value: str) -> None:
        await self._rows().put(server, user, kind, self._box.seal(server, user, kind, value))

    async def forget(self, server: str, user: str, kinds: Collection[str] | None = None) -> None:
        await self._rows().forget(server, user, kinds)

    async def put_pending(self, state: str, server: str, user: str, value: str, *, max_age_s: float) -> None:
        sealed = self._box.seal(server, user, "oauth_pending", value)
        await self._rows().put_pending(state, server, user, sealed, max_age_s=max_age_s)

    async def take_pending(self, state: str) -> PendingSignIn | None:
        row = await self._rows().take_pending(state)
        if row is None:
            return None
        server, user, sealed, created_at = row
        value = self._box.open(server, user, "oauth_pending", sealed)
        return None if value is None else PendingSignIn(server, user, value, created_at.timestamp())
