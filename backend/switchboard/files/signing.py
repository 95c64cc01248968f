"""Signed, expiring download URLs for uploads, so an MCP server can fetch a
user's file without the user's session.  HMAC-SHA256 over (file id, user,
expiry) with a key from settings, or one generated once under the data dir."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path
from urllib.parse import quote

from ..errors import Forbidden

__all__ = ["UrlSigner", "load_or_create_key"]


def load_or_create_key(path: Path) -> bytes:
    """The key in `path`, created on first use. Race-free when several app processes
    start together: the key is written to a private file, then linked into place, so
    a reader never sees a half-written key and exactly one process's key wins."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        key = bytes.fromhex(path.read_text().strip())
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)  # readable by others (copied in, or made by hand): the app's user only
        return key
    except FileNotFoundError:
        pass
    except ValueError:
        raise ValueError(
            f"{path} does not hold a hex key: delete it (signed file URLs then change) or fix it"
        ) from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_bytes(32).hex())
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process was first: use its key
    finally:
        tmp.unlink()
    return bytes.fromhex(path.read_text().strip())


def _same_signature(expected: str, given: str) -> bool:
    """A constant-time comparison of hex signatures that takes any text: `compare_digest`
    raises on a str with non-ASCII characters, so both sides are compared as UTF-8 bytes
    (lone surrogates, which a URL cannot carry, replaced)."""
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


class UrlSigner:
    def __init__(self, key: bytes, base_url: str, ttl_s: int = 3600) -> None:
        self._key = key
        self._base_url = base_url.rstrip("/")
        self.ttl_s = ttl_s

    def _sig(self, file_id: str, user: str, expires: int) -> str:
        message = f"{file_id}\n{user}\n{expires}".encode("utf-8", "replace")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def url(self, file_id: str, user: str, *, now: float | None = None) -> str:
        expires = int((now or time.time()) + self.ttl_s)
        sig = self._sig(file_id, user, expires)
        return f"{self._base_url}/api/files/{file_id}/content?u={quote(user)}&e={expires}&s={sig}"

    def seal_notice(self, user: str, text: str, *, ttl_s: int = 600) -> str:
        """A short text for `user`'s next page, carried in a URL: signed, so that a link made
        elsewhere cannot put words on the page (`open_notice` reads it back)."""
        payload = base64.urlsafe_b64encode(f"{int(time.time()) + ttl_s}\n{text}".encode()).decode().rstrip("=")
        return f"{payload}.{self._notice_sig(user, payload)}"

    def open_notice(self, user: str, sealed: str) -> str | None:
        payload, _, sig = sealed.partition(".")
        if not _same_signature(self._notice_sig(user, payload), sig):
            return None
        try:
            expires, _, text = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode().partition("\n")
            return text if int(expires) >= time.time() else None
        except ValueError:
            return None

    def _notice_sig(self, user: str, payload: str) -> str:
        message = f"notice\n{user}\n{payload}".encode("utf-8", "replace")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def verify(self, file_id: str, user: str, expires: int, sig: str) -> None:
        """Every part of the link is data from anyone: any text or number is a 403, never an error."""
        if not _same_signature(self._sig(file_id, user, expires), sig):
            raise Forbidden("this file link is not valid", action="Attach the file to your message again.")
        if expires < time.time():
            raise Forbidden("this file link has expired", action="Attach the file to your message again.")
