"""DPoP (RFC 9449) in front of a FastMCP server with its own OAuth authorization server, for the
host's tests (`signin.py --dpop`).  An ASGI layer that:
- adds `dpop_signing_alg_values_supported` to the authorization server's metadata;
- requires a valid proof on every token request (`htm` POST, `htu` the token endpoint), binds
  the tokens it issues to the proof's key (`token_type: DPoP`), and refuses a refresh whose
  proof is signed by another key than the one the refresh token is bound to;
- requires `Authorization: DPoP <token>` and a valid proof (`htm`, `htu`, `iat`, unused `jti`,
  `ath`, the key the token is bound to) on every MCP request, then hands the request on with the
  token as a bearer token, so the OAuth server behind it checks the token itself;
- with `nonce`, answers a proof without the server's current nonce with `use_dpop_nonce` (a 400
  from the token endpoint, a 401 from the MCP endpoint), as RFC 9449 sections 8 and 9 describe.

`GET /dpop-log` says what it saw, for the tests."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any
from urllib.parse import parse_qs

from joserfc import jws, jwt
from joserfc.jwk import import_key
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ALGS = ["ES256", "ES384", "PS256", "RS256"]
AS_NONCE, RS_NONCE = "as-nonce-7", "rs-nonce-9"


class ProofError(Exception):
    pass


def _registry() -> jws.JWSRegistry:
    registry = jws.JWSRegistry(algorithms=ALGS)
    registry.max_header_length = 2048
    return registry


def check_proof(proof: str | None, method: str, url: str, seen: set[str], access_token: str | None = None) -> dict:
    """The proof's claims and `jkt`, or ProofError: what a resource or authorization server checks."""
    if not proof or "," in proof:
        raise ProofError("missing or multiple DPoP proofs")
    try:
        header = jws.extract_compact(proof.encode(), registry=_registry()).protected
        if header.get("typ") != "dpop+jwt" or header.get("alg") not in ALGS or "d" in header.get("jwk", {"d": 1}):
            raise ProofError("bad proof header")
        key = import_key(header["jwk"])
        claims = dict(jwt.decode(proof, key, algorithms=[header["alg"]], registry=_registry()).claims)
    except ProofError:
        raise
    except Exception as exc:
        raise ProofError(f"proof does not verify ({type(exc).__name__})") from None
    if claims.get("htm") != method or claims.get("htu") != url:
        raise ProofError(f"proof for {claims.get('htm')} {claims.get('htu')}, not {method} {url}")
    if not isinstance(claims.get("iat"), int) or abs(time.time() - claims["iat"]) > 60:
        raise ProofError("iat out of range")
    if not isinstance(claims.get("jti"), str) or claims["jti"] in seen:
        raise ProofError("jti missing or replayed")
    if access_token is not None:
        digest = base64.urlsafe_b64encode(hashlib.sha256(access_token.encode()).digest()).rstrip(b"=").decode()
        if claims.get("ath") != digest:
            raise ProofError("ath does not match the token")
    seen.add(claims["jti"])
    return {**claims, "jkt": key.thumbprint()}


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def _json(send: Send, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    raw = json.dumps(body).encode()
    pairs = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    pairs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": pairs})
    await send({"type": "http.response.body", "body": raw})


class DPoPGuard:
    def __init__(self, app: ASGIApp, base: str, *, nonce: bool = False) -> None:
        self.app, self.base, self.nonce = app, base, nonce
        self.bound: dict[str, str] = {}  # access or refresh token -> the jkt it is bound to
        self.jtis: set[str] = set()
        self.log: dict[str, Any] = {
            "token_proofs": 0,
            "as_challenges": 0,
            "mcp_proofs": 0,
            "rs_challenges": 0,
            "refused": [],
            "jkts": [],
            "grants": [],
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path == "/dpop-log":
            return await _json(send, 200, self.log)
        if path == "/.well-known/oauth-authorization-server":
            status, headers, body = await self._inner(scope, receive)
            metadata = json.loads(body)
            metadata["dpop_signing_alg_values_supported"] = ["ES256"]
            return await _json(send, status, metadata)
        if path == "/token" and scope["method"] == "POST":
            return await self._token(scope, receive, send)
        if path.startswith("/mcp"):
            return await self._mcp(scope, receive, send)
        return await self.app(scope, receive, send)

    async def _inner(self, scope: Scope, receive: Receive) -> tuple[int, list, bytes]:
        started: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, keep)
        return started["status"], started.get("headers", []), b"".join(chunks)

    def _refuse(self, why: str) -> str:
        self.log["refused"].append(why)
        return why

    async def _token(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _body(receive)
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            proof = check_proof(headers.get("dpop"), "POST", f"{self.base}/token", self.jtis)
        except ProofError as exc:
            return await _json(send, 400, {"error": "invalid_dpop_proof", "error_description": self._refuse(str(exc))})
        if self.nonce and proof.get("nonce") != AS_NONCE:
            self.log["as_challenges"] += 1
            return await _json(send, 400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": AS_NONCE})
        refresh = form.get("refresh_token")
        if form.get("grant_type") == "refresh_token" and self.bound.get(refresh or "") != proof["jkt"]:
            why = self._refuse("refresh token used with another key")
            return await _json(send, 400, {"error": "invalid_dpop_proof", "error_description": why})
        self.log["token_proofs"] += 1
        self.log["grants"].append(form.get("grant_type"))
        status, _headers, answer = await self._inner(scope, _replay(body))
        tokens = json.loads(answer)
        if status == 200:
            for name in ("access_token", "refresh_token"):
                if tokens.get(name):
                    self.bound[tokens[name]] = proof["jkt"]
            tokens["token_type"] = "DPoP"
            self.log["jkts"].append(proof["jkt"])
        return await _json(send, status, tokens)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        metadata = f'resource_metadata="{self.base}/.well-known/oauth-protected-resource/mcp"'
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if not token:
            return await _json(send, 401, {"error": "unauthorized"}, {"WWW-Authenticate": f"DPoP {metadata}"})
        try:
            if scheme.lower() != "dpop":
                raise ProofError(f"a bound token presented as {scheme}")
            proof = check_proof(headers.get("dpop"), scope["method"], f"{self.base}{scope['path']}", self.jtis, token)
            if self.bound.get(token) != proof["jkt"]:
                raise ProofError("the proof's key is not the one the token is bound to")
        except ProofError as exc:
            challenge = f'DPoP error="invalid_token", error_description="{self._refuse(str(exc))}", {metadata}'
            return await _json(send, 401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge})
        if self.nonce and proof.get("nonce") != RS_NONCE:
            self.log["rs_challenges"] += 1
            challenge = f'DPoP error="use_dpop_nonce", {metadata}'
            return await _json(
                send, 401, {"error": "use_dpop_nonce"}, {"WWW-Authenticate": challenge, "DPoP-Nonce": RS_NONCE}
            )
        self.log["mcp_proofs"] += 1
        rest = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"authorization", b"dpop")]
        inner = {**scope, "headers": [*rest, (b"authorization", f"Bearer {token}".encode())]}
        await self.app(inner, receive, send)
