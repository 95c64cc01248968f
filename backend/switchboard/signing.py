"""Signed, expiring download URLs for uploads, so an MCP server can fetch a
user's file without the user's session.  HMAC-SHA256 over (file id, user,
expiry) with a key from settings, or one generated once under the data dir."""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path
from urllib.parse import quote

from .errors import Forbidden

__all__ = ["UrlSigner", "load_or_create_key"]


def load_or_create_key(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError):
        pass
    key = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key.hex())
    return key


class UrlSigner:
    def __init__(self, key: bytes, base_url: str, ttl_s: int = 3600) -> None:
        self._key = key
        self._base_url = base_url.rstrip("/")
        self.ttl_s = ttl_s

    def _sig(self, file_id: str, user: str, expires: int) -> str:
        message = f"{file_id}\n{user}\n{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def url(self, file_id: str, user: str, *, now: float | None = None) -> str:
        expires = int((now or time.time()) + self.ttl_s)
        sig = self._sig(file_id, user, expires)
        return f"{self._base_url}/api/files/{file_id}/content?u={quote(user)}&e={expires}&s={sig}"

    def verify(self, file_id: str, user: str, expires: int, sig: str) -> None:
        if not hmac.compare_digest(self._sig(file_id, user, expires), sig):
            raise Forbidden("this file link is not valid", action="Attach the file to your message again.")
        if expires < time.time():
            raise Forbidden("this file link has expired", action="Attach the file to your message again.")
