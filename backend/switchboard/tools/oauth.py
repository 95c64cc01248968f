"""OAuth 2.1 sign-in to remote MCP servers, per user, on the MCP SDK's client
(`OAuthClientProvider`: protected-resource and authorization-server metadata
discovery, a pre-registered client, else this host's client ID metadata document
where the authorization server takes one, else dynamic client registration; PKCE,
the `resource` parameter, refresh, step-up on `insufficient_scope`), and the
`client_credentials` grant for machine-to-machine servers (the SDK's
`ClientCredentialsOAuthProvider`: one shared token, held in memory only).

The host adds two things: token storage in the vault (per server and user), and
the browser leg.  `begin` runs the SDK's flow in a task until it asks to send the
user to the authorization server; that URL goes back to the browser, and the task
waits (holding the PKCE verifier, in memory only) for `finish`, which the callback
route calls with the `state` and `code` the browser brought back.  A `state` is
bound to the user who started it and is used once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.exceptions import MCPDeprecationWarning

from ..config.models import OAuthConfig, ServerConfig
from ..errors import BadRequest, Forbidden, NeedsAuth, ToolError
from .vault import CredentialVault

__all__ = ["SignIns"]

log = logging.getLogger("switchboard.tools")

SIGN_IN_WAIT_S = 600.0  # how long a started sign-in waits for the browser to come back
URL_WAIT_S = 30.0  # discovery and registration, before the redirect is known


class _VaultStorage:
    """The SDK's TokenStorage, on the vault: one token set per (server, user)."""

    def __init__(self, vault: CredentialVault, server: str, user: str, auth: OAuthConfig, redirect_uri: str,
                 *, fresh: bool = False) -> None:  # fmt: skip
        self._vault, self._server, self._user, self._auth, self._redirect = vault, server, user, auth, redirect_uri
        self._fresh = fresh  # a step-up sign-in: start from no token, so the server asks again

    async def _stored(self) -> dict[str, Any] | None:
        raw = await self._vault.get(self._server, self._user, "oauth_tokens")
        return json.loads(raw) if raw else None

    async def get_tokens(self) -> OAuthToken | None:
        stored = None if self._fresh else await self._stored()
        return OAuthToken.model_validate(stored["token"]) if stored else None

    async def expires_at(self) -> float | None:
        stored = await self._stored()
        return stored.get("expires_at") if stored else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        # `expires_in` is relative to when the token was issued: keep the moment it ends.
        lifetime = tokens.expires_in
        expires_at = time.time() + lifetime - _margin(lifetime) if lifetime else None
        value = {"token": tokens.model_dump(mode="json"), "expires_at": expires_at}
        await self._vault.put(self._server, self._user, "oauth_tokens", json.dumps(value))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._auth.client_id:  # pre-registered in mcp.json
            return OAuthClientInformationFull(
                client_id=self._auth.client_id, client_secret=self._auth.client_secret,
                redirect_uris=[self._redirect],  # type: ignore[list-item]
                token_endpoint_auth_method="client_secret_post" if self._auth.client_secret else "none",
            )  # fmt: skip
        raw = await self._vault.get(self._server, self._user, "oauth_client")
        return OAuthClientInformationFull.model_validate_json(raw) if raw else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if not self._auth.client_id:
            await self._vault.put(self._server, self._user, "oauth_client", client_info.model_dump_json())


def _margin(lifetime: float) -> float:
    """Refresh this long before a token ends, so it does not expire between our check and the server's."""
    return min(60.0, lifetime / 5)


class _MemoryStorage:
    """The SDK's TokenStorage for a machine-to-machine server: one token set, in memory only
    (it is fetched again with the client's own credentials whenever it is missing)."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info


class _Provider(OAuthClientProvider):
    """The SDK's provider, told when a token expires, a little early.  Left alone it loads
    stored tokens without their expiry and checks expiry to the second, so it can send a
    token that is expired by the time the server looks; on that 401 it starts a whole new
    sign-in instead of refreshing."""

    preregistered = False  # the client is the one in mcp.json (not registered by this host)
    extra_scope: str | None = None  # a step-up: scopes the server asked for beyond what was granted

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.context.update_token_expiry = self._update_expiry  # type: ignore[method-assign]

    def _update_expiry(self, token: OAuthToken) -> None:
        lifetime = token.expires_in
        self.context.token_expiry_time = time.time() + lifetime - _margin(lifetime) if lifetime else None

    def _fit_client_authentication(self) -> None:
        """A client with a secret (pre-registered in mcp.json) authenticates the way the
        authorization server says it takes: its metadata's `token_endpoint_auth_methods_supported`,
        `client_secret_basic` first (the default when the list is absent, RFC 8414)."""
        info, metadata = self.context.client_info, self.context.oauth_metadata
        if not self.preregistered or info is None or not info.client_secret:
            return  # a registered client's method is the one its registration answer gave
        supported = (metadata.token_endpoint_auth_methods_supported if metadata else None) or ["client_secret_basic"]
        if info.token_endpoint_auth_method not in supported:
            usable = [m for m in ("client_secret_basic", "client_secret_post") if m in supported]
            if usable:
                info.token_endpoint_auth_method = usable[0]  # type: ignore[assignment]

    async def _perform_authorization(self) -> httpx2.Request:
        if self.extra_scope:
            self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, self.extra_scope)
        return await super()._perform_authorization()

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        self._fit_client_authentication()
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    async def _refresh_token(self) -> httpx2.Request:
        self._fit_client_authentication()
        return await super()._refresh_token()

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        if isinstance(storage, _VaultStorage):
            self.context.token_expiry_time = await storage.expires_at()


@dataclass
class _Pending:
    server: str
    user: str
    code: asyncio.Future[AuthorizationCodeResult]
    task: asyncio.Task[None]
    started: float = field(default_factory=time.monotonic)


class SignIns:
    def __init__(self, vault: CredentialVault, redirect_uri: str, client_metadata_url: str | None = None) -> None:
        self._vault = vault
        self.redirect_uri = redirect_uri
        # This host's client ID as an https URL (a client ID metadata document), used with
        # authorization servers that advertise `client_id_metadata_document_supported`.
        self.client_metadata_url = client_metadata_url
        self._pending: dict[str, _Pending] = {}
        # (server, user) -> the scopes a server asked for (403 insufficient_scope) during a call:
        # the user's next Connect asks for them.
        self._step_up: dict[tuple[str, str], str] = {}

    def step_up_wanted(self, server: str, user: str) -> bool:
        return (server, user) in self._step_up

    def client_metadata_document(self) -> dict[str, Any] | None:
        """The client ID metadata document at `client_metadata_url` (None when there is none):
        a public client (PKCE, no secret) that may only be redirected to this host's callback."""
        if self.client_metadata_url is None:
            return None
        return {
            "client_id": self.client_metadata_url,
            "client_name": "Switchboard",
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }

    def _provider(self, server: str, config: ServerConfig, user: str, redirect: Any, callback: Any,
                  *, step_up: str | None = None) -> _Provider:  # fmt: skip
        assert isinstance(config.auth, OAuthConfig) and config.url is not None
        storage = _VaultStorage(self._vault, server, user, config.auth, self.redirect_uri, fresh=step_up is not None)
        provider = _Provider(config.url, self._metadata(config.auth), storage, redirect, callback,
                             client_metadata_url=None if config.auth.client_id else self.client_metadata_url)  # fmt: skip
        provider.preregistered = bool(config.auth.client_id)
        provider.extra_scope = step_up
        return provider

    def machine_auth(self, server: str, config: ServerConfig) -> httpx2.Auth:
        """The httpx auth of a machine-to-machine server's shared session: the
        `client_credentials` grant with the client from `auth`, its token kept in memory."""
        auth = config.auth
        assert isinstance(auth, OAuthConfig) and auth.client_id and config.url is not None
        if auth.issuer is None:
            log.warning("server %s: its client_credentials client has no 'issuer' in mcp.json, so its credential goes "
                        "to whichever authorization server the MCP server names; set 'auth.issuer'", server,
                        extra={"event": "oauth_no_issuer", "server": server})  # fmt: skip
        with warnings.catch_warnings():
            # Without `issuer` the SDK warns (once per provider); the config check says it once, in words.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            scope = " ".join(auth.scopes) if auth.scopes else None
            if auth.private_key:
                signer = SignedJWTParameters(issuer=auth.client_id, subject=auth.client_id, signing_key=auth.private_key,
                                             signing_algorithm=auth.signing_algorithm)  # fmt: skip
                return PrivateKeyJWTOAuthProvider(config.url, _MemoryStorage(), auth.client_id,
                                                  signer.create_assertion_provider(), scope=scope, issuer=auth.issuer)  # fmt: skip
            return ClientCredentialsOAuthProvider(
                config.url, _MemoryStorage(), auth.client_id, auth.client_secret or "",
                scope=scope, issuer=auth.issuer,
            )  # fmt: skip

    def _metadata(self, auth: OAuthConfig) -> OAuthClientMetadata:
        return OAuthClientMetadata(
            client_name="Switchboard",
            redirect_uris=[self.redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=" ".join(auth.scopes) if auth.scopes else None,
            token_endpoint_auth_method="client_secret_post" if auth.client_secret else "none",
        )

    def session_auth(self, server: str, config: ServerConfig, user: str) -> httpx2.Auth:
        """The httpx auth of one user's MCP session: their stored tokens, refreshed when they
        expire; when the user must sign in again, the session ends with needs_auth."""
        assert isinstance(config.auth, OAuthConfig) and config.url is not None

        async def must_sign_in(url: str) -> None:
            scope = parse_qs(urlsplit(url).query).get("scope", [""])[0]
            granted = await storage.get_tokens()
            if granted is not None and set(scope.split()) - set((granted.scope or "").split()):
                # the server wants more than the user granted (step-up): their next Connect asks for it
                self._step_up[(server, user)] = scope
                raise NeedsAuth(f"server '{server}' needs more permissions for this ({scope}): press Connect next "
                                f"to '{server}' to allow them, then try again")  # fmt: skip
            raise NeedsAuth(f"server '{server}' needs you to sign in again: press Connect")

        async def no_callback() -> AuthorizationCodeResult:
            raise NeedsAuth(f"server '{server}' needs you to sign in again: press Connect")

        provider = self._provider(server, config, user, must_sign_in, no_callback)
        storage = provider.context.storage
        return provider

    async def begin(self, server: str, config: ServerConfig, user: str) -> str:
        """Start a sign-in; returns the authorization server's URL to send the browser to."""
        assert isinstance(config.auth, OAuthConfig) and config.url is not None
        self._drop_stale()
        loop = asyncio.get_running_loop()
        url_ready: asyncio.Future[str] = loop.create_future()
        code: asyncio.Future[AuthorizationCodeResult] = loop.create_future()

        async def redirect(url: str) -> None:
            url_ready.set_result(url)

        async def callback() -> AuthorizationCodeResult:
            return await asyncio.wait_for(asyncio.shield(code), SIGN_IN_WAIT_S)

        provider = self._provider(server, config, user, redirect, callback, step_up=self._step_up.get((server, user)))
        task = asyncio.create_task(self._drive(provider, config.url), name=f"oauth:{server}")
        waiting = asyncio.ensure_future(url_ready)
        done, _ = await asyncio.wait({waiting, task}, timeout=URL_WAIT_S, return_when=asyncio.FIRST_COMPLETED)
        if waiting not in done:
            waiting.cancel()
            task.cancel()
            if task in done and task.exception() is not None:
                raise ToolError(f"could not start signing in to '{server}': {_why(task.exception())}")
            if task in done:
                raise ToolError(f"server '{server}' did not ask for a sign-in (it may not need one)")
            raise ToolError(f"could not start signing in to '{server}': its authorization server did not answer in time")
        url = url_ready.result()
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        self._pending[state] = _Pending(server, user, code, task)
        task.add_done_callback(lambda _t: self._pending.pop(state, None))
        return url

    async def _drive(self, provider: OAuthClientProvider, url: str) -> None:
        """One request through the SDK's auth flow: a 401, then discovery, registration,
        the browser leg and the token exchange; the tokens land in the vault."""
        async with httpx2.AsyncClient(auth=provider, timeout=30.0, follow_redirects=False) as client:
            await client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                              headers={"Accept": "application/json, text/event-stream"})  # fmt: skip

    async def finish(self, user: str, *, state: str, code: str, error: str = "", iss: str | None = None) -> str:
        """Complete the sign-in the callback carries; returns the server's name."""
        pending = self._pending.pop(state, None) if state else None  # single use, whatever follows
        if pending is None:
            raise BadRequest("this sign-in link is unknown, already used or expired",
                             action="Press Connect again to start a new sign-in.")  # fmt: skip
        if pending.user != user:
            pending.task.cancel()
            log.warning("an OAuth callback came back for another user; refused",
                        extra={"event": "oauth_state_mismatch", "server": pending.server})  # fmt: skip
            raise Forbidden("this sign-in was started by another user", action="Press Connect again yourself.")
        if error or not code:
            pending.task.cancel()
            raise BadRequest(f"signing in to '{pending.server}' was not completed: {error or 'no code came back'}",
                             action="Press Connect to try again.")  # fmt: skip
        pending.code.set_result(AuthorizationCodeResult(code=code, state=state, iss=iss))
        try:
            await asyncio.wait_for(pending.task, URL_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - the SDK's flow errors become one clear message
            raise BadRequest(f"signing in to '{pending.server}' failed: {_why(exc)}",
                             action="Press Connect to try again.") from None  # fmt: skip
        if await self._vault.get(pending.server, user, "oauth_tokens") is None:
            raise BadRequest(f"signing in to '{pending.server}' did not give a token", action="Press Connect to try again.")
        self._step_up.pop((pending.server, user), None)
        return pending.server

    def _drop_stale(self) -> None:
        now = time.monotonic()
        for state, pending in list(self._pending.items()):
            if now - pending.started > SIGN_IN_WAIT_S:
                pending.task.cancel()
                self._pending.pop(state, None)


def _why(exc: BaseException | None) -> str:
    """The SDK's flow errors (OAuthFlowError, OAuthTokenError, httpx2 errors) name what failed."""
    return f"{type(exc).__name__}: {exc}" if exc is not None else "no reason given"
