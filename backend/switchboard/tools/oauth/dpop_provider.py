"""DPoP-bound tokens (RFC 9449) on the MCP SDK's OAuth client, which knows only bearer tokens.

Mixed into `Provider` (after `GuardedAuth`, before the SDK's `OAuthClientProvider`):
- a sign-in with an authorization server whose metadata lists `dpop_signing_alg_values_supported`
  gets a fresh key pair (`use_dpop_if_offered`); without that list nothing changes (bearer);
- every token request (the authorization code exchange, each refresh) carries a proof;
- a token answered with `token_type: DPoP` is bound: it is stored with its key (one vault record,
  encrypted), and every request to the MCP server carries `Authorization: DPoP <token>` and a
  fresh proof with the token's hash (`ath`);
- a server that asks for a nonce (`use_dpop_nonce`: a 400 from the token endpoint, a 401 with
  `WWW-Authenticate: DPoP error="use_dpop_nonce"` from the MCP server) gets the request again,
  once, with the nonce in the proof; the newest nonce each URL sent is used from then on."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx2
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import extract_field_from_www_auth

from .dpop import DPoPKey, htu
from .storage import VaultStorage

__all__ = ["DPoPAuth"]

NONCE_HEADER = "DPoP-Nonce"
_METADATA_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


class DPoPAuth:
    """The DPoP half of one user's provider for one server."""

    context: OAuthContext  # set by the SDK's provider, the other base
    dpop: DPoPKey | None = None  # the key this sign-in's tokens are (to be) bound to
    dpop_bound = False  # the current access token is DPoP-bound (else it is a bearer token)
    # The authorization server's `dpop_signing_alg_values_supported`, read from its metadata as the
    # flow fetches it (the SDK's metadata model drops the field); kept with a pending sign-in.
    dpop_algs: list[str] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._nonces: dict[str, str] = {}  # htu -> the newest nonce that URL's server sent

    def use_dpop_if_offered(self) -> None:
        """Before a token request of a new sign-in: a fresh key when the authorization server takes DPoP."""
        alg = DPoPKey.choose(self.dpop_algs)
        self.dpop = DPoPKey.generate(alg) if alg is not None else None

    def sign_token_request(self, request: httpx2.Request) -> None:
        if self.dpop is not None:
            url = str(request.url)
            request.headers["DPoP"] = self.dpop.proof(request.method, url, nonce=self._nonces.get(htu(url)))

    async def nonce_wanted(self, request: httpx2.Request, response: httpx2.Response, *, resource: bool) -> bool:
        """Keep the nonce `response` carries for its URL; True when it refused `request` for want
        of one (so the request should go again, once, with a new proof)."""
        nonce = response.headers.get(NONCE_HEADER)
        if self.dpop is None or not nonce or "DPoP" not in request.headers:
            return False
        self._nonces[htu(str(request.url))] = nonce
        if resource:
            return response.status_code == 401 and extract_field_from_www_auth(response, "error") == "use_dpop_nonce"
        if response.status_code != 400:
            return False
        try:
            return bool(json.loads(await response.aread()).get("error") == "use_dpop_nonce")
        except (ValueError, AttributeError):
            return False

    async def _note_metadata(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """Keep `dpop_signing_alg_values_supported` from an authorization server's metadata."""
        if (
            request.method != "GET"
            or response.status_code != 200
            or not any(name in request.url.path for name in _METADATA_PATHS)
        ):
            return
        try:
            body = json.loads(await response.aread())
        except ValueError:
            return  # the SDK reports the malformed answer
        algs = body.get("dpop_signing_alg_values_supported") if isinstance(body, dict) else None
        self.dpop_algs = [a for a in algs if isinstance(a, str)] if isinstance(algs, list) else None

    def _add_auth_header(self, request: httpx2.Request) -> None:
        tokens = self.context.current_tokens
        if not (self.dpop is not None and self.dpop_bound and tokens and tokens.access_token):
            request.headers.pop("DPoP", None)  # a proof of an earlier attempt, when the new token is a bearer one
            super()._add_auth_header(request)  # type: ignore[misc]
            return
        url = str(request.url)
        request.headers["Authorization"] = f"DPoP {tokens.access_token}"
        request.headers["DPoP"] = self.dpop.proof(
            request.method, url, access_token=tokens.access_token, nonce=self._nonces.get(htu(url))
        )

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)  # type: ignore[misc]
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                resource = outgoing is request
                if not resource:
                    await self._note_metadata(outgoing, response)
                if await self.nonce_wanted(outgoing, response, resource=resource):
                    if resource:
                        self._add_auth_header(outgoing)
                    else:
                        self.sign_token_request(outgoing)
                    response = yield outgoing
                    await self.nonce_wanted(
                        outgoing, response, resource=resource
                    )  # keep a newer nonce; no second retry
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        storage = self.context.storage
        if isinstance(storage, VaultStorage):  # a stored bound token comes with its key
            self.dpop = storage.dpop_key
            self.dpop_bound = storage.dpop_key is not None

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        request: httpx2.Request = await super()._exchange_token_authorization_code(auth_code, code_verifier)  # type: ignore[misc]
        self.sign_token_request(request)
        return request

    async def _refresh_token(self) -> httpx2.Request:
        request: httpx2.Request = await super()._refresh_token()  # type: ignore[misc]
        self.sign_token_request(request)
        return request

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(await self._binding_of(response))  # type: ignore[misc]

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed: bool = await super()._handle_refresh_response(await self._binding_of(response))  # type: ignore[misc]
        return refreshed

    async def _binding_of(self, response: httpx2.Response) -> httpx2.Response:
        """Note whether a token answer is DPoP-bound (and tell the storage to keep the key with it).
        The SDK's token model takes only `Bearer`, so a bound token reaches it as one; the binding
        is kept here and in the vault."""
        if response.status_code not in (200, 201):
            return response
        try:
            body = json.loads(await response.aread())
        except ValueError:
            return response  # the SDK reports the malformed answer
        if not isinstance(body, dict):
            return response
        bound = self.dpop is not None and str(body.get("token_type", "")).lower() == "dpop"
        self.dpop_bound = bound
        storage = self.context.storage
        if isinstance(storage, VaultStorage):
            storage.dpop_key = self.dpop if bound else None
        if not bound:
            return response  # a bearer token (the server did not bind it): used as one
        body["token_type"] = "Bearer"
        return httpx2.Response(
            response.status_code,
            headers={"content-type": "application/json"},
            content=json.dumps(body).encode(),
            request=response.request,
        )
