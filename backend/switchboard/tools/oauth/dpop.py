"""DPoP (RFC 9449): a key pair that a user's OAuth tokens for one server are bound to, and the
proofs signed with it.  A proof is a short JWT (`typ: dpop+jwt`, the public key in its `jwk`
header) that names one HTTP request (`htm`, `htu`), when it was made (`iat`), a unique id
(`jti`), the server's nonce when it asked for one, and, on a request to the resource, the hash
of the access token it goes with (`ath`).  A token bound to the key is worthless without it: a
copy replayed from elsewhere cannot sign a proof.

The JOSE work (keys, signatures, thumbprints) is `joserfc`'s.  The private key lives in the
credential vault with the token set it is bound to (encrypted at rest) and nowhere else: it
has no repr, and is never logged or shown."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:  # joserfc loads with the first DPoP key: most sites have none, and start sooner
    from joserfc.jwk import Key

__all__ = ["SUPPORTED_ALGS", "DPoPKey", "access_token_hash", "htu"]

# What the host can sign with, in the order it prefers them; the authorization server's
# `dpop_signing_alg_values_supported` picks from these.
SUPPORTED_ALGS = ("ES256", "ES384", "PS256", "RS256")  # not EdDSA: deprecated (RFC 9864)


def htu(url: str) -> str:
    """The `htu` of a request: its URL without query and fragment (RFC 9449 4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def access_token_hash(access_token: str) -> str:
    """`ath`: base64url (no padding) of the SHA-256 of the access token's ASCII bytes."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _generate(alg: str) -> Key:
    from joserfc.jwk import ECKey, RSAKey

    if alg == "ES256":
        return ECKey.generate_key("P-256")
    if alg == "ES384":
        return ECKey.generate_key("P-384")
    return RSAKey.generate_key(2048)


class DPoPKey:
    """One key pair and the algorithm it signs with."""

    __slots__ = ("_key", "alg")

    def __init__(self, alg: str, key: Key) -> None:
        if alg not in SUPPORTED_ALGS:
            raise ValueError(f"unsupported DPoP algorithm {alg!r}")
        self.alg = alg
        self._key = key

    @classmethod
    def generate(cls, alg: str = "ES256") -> DPoPKey:
        if alg not in SUPPORTED_ALGS:
            raise ValueError(f"unsupported DPoP algorithm {alg!r}")
        return cls(alg, _generate(alg))

    @staticmethod
    def choose(offered: Sequence[str] | None) -> str | None:
        """The algorithm to use with an authorization server that offers `offered`
        (`dpop_signing_alg_values_supported`); None when it offers none the host signs with."""
        return next((alg for alg in SUPPORTED_ALGS if alg in (offered or ())), None)

    @classmethod
    def from_sealed(cls, value: dict[str, Any]) -> DPoPKey:
        """The key as `sealed()` wrote it (read from the vault)."""
        from joserfc.jwk import import_key

        return cls(value["alg"], import_key(value["jwk"]))

    def sealed(self) -> dict[str, Any]:
        """The private key, for the vault only (which encrypts it)."""
        return {"alg": self.alg, "jwk": self._key.as_dict(private=True)}

    def public_jwk(self) -> dict[str, Any]:
        return dict(self._key.as_dict(private=False))

    def thumbprint(self) -> str:
        """The key's JWK SHA-256 thumbprint (RFC 7638): the `jkt` a bound token names."""
        return self._key.thumbprint()

    def proof(
        self,
        method: str,
        url: str,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
        now: float | None = None,
    ) -> str:
        """A fresh proof for one request (a new `jti` each time)."""
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(18),
            "htm": method.upper(),
            "htu": htu(url),
            "iat": int(time.time() if now is None else now),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        if nonce is not None:
            claims["nonce"] = nonce
        from joserfc import jwt

        header = {"typ": "dpop+jwt", "alg": self.alg, "jwk": self.public_jwk()}
        return jwt.encode(header, claims, self._key, algorithms=[self.alg])

    def __repr__(self) -> str:
        return f"DPoPKey({self.alg}, jkt={self.thumbprint()})"
