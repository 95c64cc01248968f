"""The checkpoint signing key (Ed25519): from SWITCHBOARD_AUDIT_KEY (the base64 of a 32-byte
seed, or a PEM private key) or made once in the data dir (`audit-signing.key`, 0600), and the
signing and checking of one checkpoint statement."""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .chain import canonical

__all__ = ["KEY_FILE", "load_key", "public_text", "sign_checkpoint", "signed_by"]

KEY_FILE = "audit-signing.key"


def _from_text(text: str) -> Ed25519PrivateKey:
    text = text.strip()
    if text.startswith("-----BEGIN"):
        key = serialization.load_pem_private_key(text.encode(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("SWITCHBOARD_AUDIT_KEY is a PEM key but not an Ed25519 one")
        return key
    try:
        seed = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        seed = b""
    if len(seed) != 32:
        raise ValueError("SWITCHBOARD_AUDIT_KEY must be the base64 of 32 random bytes, or an Ed25519 PEM private key")
    return Ed25519PrivateKey.from_private_bytes(seed)


def load_key(configured: str | None, data_dir: Path) -> Ed25519PrivateKey:
    """The configured key, or the data dir's (made on first use; several processes starting at
    once agree on one: it is written aside, then linked into place)."""
    if configured:
        return _from_text(configured)
    path = data_dir / KEY_FILE
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(base64.b64encode(secrets.token_bytes(32)).decode())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return _from_text(path.read_text())


def public_text(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return base64.b64encode(public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)).decode()


def _statement(seq: int, hash_: str, ts: str) -> bytes:
    return canonical({"seq": seq, "hash": hash_, "ts": ts, "what": "switchboard audit checkpoint"})


def sign_checkpoint(key: Ed25519PrivateKey, seq: int, hash_: str, ts: str) -> str:
    return base64.b64encode(key.sign(_statement(seq, hash_, ts))).decode()


def signed_by(public: str, signature: str, seq: int, hash_: str, ts: str) -> bool:
    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public))
        key.verify(base64.b64decode(signature), _statement(seq, hash_, ts))
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True
