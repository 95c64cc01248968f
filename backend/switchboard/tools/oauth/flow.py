"""OAuth 2.1 sign-in to remote MCP servers, per user, on the MCP SDK's client
(`OAuthClientProvider`: protected-resource and authorization-server metadata
discovery, a pre-registered client, else this host's client ID metadata document
where the authorization server takes one, else dynamic client registration; PKCE,
the `resource` parameter, refresh, step-up on `insufficient_scope`), and the
`client_credentials` grant for machine-to-machine servers (the SDK's
`ClientCredentialsOAuthProvider`: one shared token, held in memory only).

The host adds token storage in the vault (per server and user), the endpoint policy
(`oauth_guard`), and the browser leg in two halves that need not run in one process.
`begin` runs the SDK's flow until it would send the user to the authorization server,
keeps what the token exchange will need (state, PKCE verifier, the discovered metadata
and client) as one pending sign-in per (server, user) in the vault, encrypted, and ends:
nothing waits in memory.  `finish`, which the callback route calls on whichever process
the browser lands on, takes that pending sign-in (once), checks that the same user
started it and that the answer came from the expected authorization server (RFC 9207
`iss`), and exchanges the code for tokens.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import warnings
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import SignedJWTParameters
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.exceptions import MCPDeprecationWarning

from ...config.models import OAuthConfig, ServerConfig
from ...errors import BadRequest, Forbidden, NeedsAuth, SignInFailed, SwitchboardError, ToolError
from .provider import GuardedClientCredentials, GuardedPrivateKeyJWT, Parked, Provider
from .storage import MemoryStorage, VaultStorage
from .url_guard import POLICY_KEY, EndpointPolicy, is_local_url, origin_of, pinned_transport, sign_in_failure
from .vault import CredentialVault

__all__ = ["SignIns"]

log = logging.getLogger("switchboard.tools")

STEP_UP = "oauth_step_up"  # the vault's kind for the scopes a server asked for beyond the granted ones
SIGN_IN_WAIT_S = 600.0  # how long a started sign-in waits for the browser to come back
URL_WAIT_S = 30.0  # discovery and registration, before the redirect is known


class SignIns:
    def __init__(
        self, vault: CredentialVault, redirect_uri: str, client_metadata_url: str | None = None, *, dev: bool = False
    ) -> None:
        self._vault = vault
        self.redirect_uri = redirect_uri
        # This host's client ID as an https URL (a client ID metadata document), used with
        # authorization servers that advertise `client_id_metadata_document_supported`.
        self.client_metadata_url = client_metadata_url
        self._dev = dev  # dev auth mode: plain http, and private endpoints for servers on localhost

    async def step_up_wanted(self, server: str, user: str) -> str | None:
        """The scopes this user must still allow for the server (a step-up), else None. A server
        that refused a call for want of scopes (403 insufficient_scope) asked for them; the
        user's next Connect, on whichever process, asks for them (kept in the vault)."""
        try:
            return await self._vault.get(server, user, STEP_UP) or None
        except SwitchboardError:
            return None

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

    def policy(self, server: str, config: ServerConfig) -> EndpointPolicy:
        """Where this server's sign-in may send the host (see `oauth_guard`)."""
        assert isinstance(config.auth, OAuthConfig) and config.url is not None
        allow = config.auth.allow_private_endpoints or (self._dev and is_local_url(config.url))
        # A user's own server's origin is checked (and pinned) too, unless the operator allowed its host.
        own = None if config.guard_requests == "all" else origin_of(config.url)
        return EndpointPolicy(server, own_origin=own, allow_private=allow, allow_http=self._dev)

    @staticmethod
    def warn_without_issuer(server: str, config: ServerConfig) -> None:
        """Said at start-up: a client secret without `issuer` goes wherever the server's metadata points."""
        auth = config.auth
        if (
            isinstance(auth, OAuthConfig)
            and auth.client_id
            and (auth.client_secret or auth.private_key)
            and auth.issuer is None
        ):
            log.warning(
                "server %s: its pre-registered client has no 'issuer' in mcp.json, so its credential goes to "
                "whichever authorization server the MCP server names; set 'auth.issuer'",
                server,
                extra={"event": "oauth_no_issuer", "server": server},
            )

    def _provider(
        self, server: str, config: ServerConfig, user: str, redirect: Any, callback: Any, *, step_up: str | None = None
    ) -> Provider:
        assert isinstance(config.auth, OAuthConfig) and config.url is not None
        storage = VaultStorage(self._vault, server, user, config.auth, self.redirect_uri, fresh=step_up is not None)
        provider = Provider(
            config.url,
            self._metadata(config.auth),
            storage,
            redirect,
            callback,
            client_metadata_url=None if config.auth.client_id else self.client_metadata_url,
            policy=self.policy(server, config),
        )
        provider.preregistered = bool(config.auth.client_id)
        provider.issuer = config.auth.issuer
        provider.extra_scope = step_up
        return provider

    def machine_auth(self, server: str, config: ServerConfig) -> httpx2.Auth:
        """The httpx auth of a machine-to-machine server's shared session: the
        `client_credentials` grant with the client from `auth`, its token kept in memory."""
        auth = config.auth
        assert isinstance(auth, OAuthConfig) and auth.client_id and config.url is not None
        policy = self.policy(server, config)
        with warnings.catch_warnings():
            # Without `issuer` the SDK warns (once per provider); warn_without_issuer says it once, in words.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            scope = " ".join(auth.scopes) if auth.scopes else None
            if auth.private_key:
                signer = SignedJWTParameters(
                    issuer=auth.client_id,
                    subject=auth.client_id,
                    signing_key=auth.private_key,
                    signing_algorithm=auth.signing_algorithm,
                )
                return GuardedPrivateKeyJWT(
                    config.url,
                    MemoryStorage(),
                    auth.client_id,
                    signer.create_assertion_provider(),
                    scope=scope,
                    issuer=auth.issuer,
                    policy=policy,
                )
            return GuardedClientCredentials(
                config.url,
                MemoryStorage(),
                auth.client_id,
                auth.client_secret or "",
                scope=scope,
                issuer=auth.issuer,
                policy=policy,
            )

    def _metadata(self, auth: OAuthConfig) -> OAuthClientMetadata:
        # OIDC application_type: a web client redirects to an https address that is not this
        # machine; a callback on localhost (or plain http) is a native client's.
        web = urlsplit(self.redirect_uri).scheme == "https" and not is_local_url(self.redirect_uri)
        return OAuthClientMetadata(
            client_name="Switchboard",
            redirect_uris=[self.redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=" ".join(auth.scopes) if auth.scopes else None,
            token_endpoint_auth_method="client_secret_post" if auth.client_secret else "none",
            application_type="web" if web else "native",
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
                await self._vault.put(server, user, STEP_UP, scope)
                raise NeedsAuth(
                    f"server '{server}' needs more permissions for this ({scope}): press Connect next "
                    f"to '{server}' to allow them, then try again"
                )
            raise NeedsAuth(f"server '{server}' needs you to sign in again: press Connect")

        async def no_callback() -> AuthorizationCodeResult:
            raise NeedsAuth(f"server '{server}' needs you to sign in again: press Connect")

        provider = self._provider(server, config, user, must_sign_in, no_callback)
        storage = provider.context.storage
        return provider

    # -- the browser leg ------------------------------------------------------------------

    async def begin(self, server: str, config: ServerConfig, user: str) -> str:
        """Start a sign-in; returns the authorization server's URL to send the browser to.
        This user's earlier pending sign-in to the server, if any, is dropped."""
        assert isinstance(config.auth, OAuthConfig) and config.url is not None
        sent: list[str] = []

        async def redirect(url: str) -> None:
            sent.append(url)

        async def callback() -> AuthorizationCodeResult:
            # Not the browser's answer: it lets the SDK hand over the PKCE verifier (see Provider.park).
            metadata = provider.context.oauth_metadata
            state = parse_qs(urlsplit(sent[0]).query).get("state", [""])[0]
            return AuthorizationCodeResult(code="-", state=state, iss=str(metadata.issuer) if metadata else None)

        async def park(parked: Provider, verifier: str) -> None:
            state = parse_qs(urlsplit(sent[0]).query).get("state", [""])[0]
            await self._vault.put_pending(
                state, server, user, _pending_value(parked, verifier), max_age_s=SIGN_IN_WAIT_S
            )

        step_up = await self.step_up_wanted(server, user)
        provider = self._provider(server, config, user, redirect, callback, step_up=step_up)
        provider.park = park
        try:
            async with asyncio.timeout(URL_WAIT_S):
                await self._drive(provider, config.url)
        except Parked:
            return sent[0]
        except TimeoutError:
            raise SignInFailed(
                f"could not start signing in to '{server}': its authorization server did not answer "
                f"within {URL_WAIT_S:g} s",
                action="Try again later.",
            ) from None
        except SwitchboardError:
            raise
        except httpx2.HTTPError as exc:
            raise SignInFailed(
                f"could not start signing in to '{server}': {_unreachable(exc)}",
                action="Try again later; if it keeps failing, ask your administrator.",
            ) from None
        raise ToolError(f"server '{server}' did not ask for a sign-in (it may not need one)")

    async def _drive(self, provider: Provider, url: str) -> None:
        """One request through the SDK's auth flow: a 401, then discovery and registration,
        up to the redirect to the authorization server."""
        async with httpx2.AsyncClient(
            auth=provider, timeout=URL_WAIT_S, follow_redirects=False, transport=pinned_transport()
        ) as client:
            await client.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
            )

    async def finish(
        self,
        user: str,
        *,
        state: str,
        code: str,
        error: str = "",
        iss: str | None = None,
        config_of: Callable[[str], ServerConfig],
    ) -> str:
        """Complete the sign-in the callback carries; returns the server's name."""
        pending = await self._vault.take_pending(state) if state else None  # single use, whatever follows
        if pending is None or time.time() - pending.created > SIGN_IN_WAIT_S:
            raise BadRequest(
                "this sign-in link is unknown, already used, replaced by a newer sign-in or expired",
                action="Press Connect again to start a new sign-in.",
            )
        server = pending.server
        if pending.user != user:
            log.warning(
                "an OAuth callback came back for another user; refused",
                extra={"event": "oauth_state_mismatch", "server": server},
            )
            raise Forbidden("this sign-in was started by another user", action="Press Connect again yourself.")
        if error or not code:
            said = "".join(c for c in error[:80] if c.isalnum() or c in "_-. ") or "no code came back"
            raise BadRequest(
                f"signing in to '{server}' was not completed: {said}", action="Press Connect to try again."
            )
        saved = json.loads(pending.value)
        provider = self._provider(server, config_of(server), user, None, None)
        _restore(provider, saved)
        try:
            validate_authorization_response_iss(iss, provider.context.oauth_metadata)
        except OAuthFlowError:
            expected = provider.context.oauth_metadata.issuer if provider.context.oauth_metadata else "none"
            log.warning(
                "server %s: an authorization response named issuer %r, expected %s",
                server,
                (iss or "")[:100],
                expected,
                extra={"event": "oauth_iss_mismatch", "server": server},
            )
            raise SignInFailed(
                f"signing in to '{server}' was refused: the answer did not come from {expected}, the "
                "authorization server this sign-in was started with (it may be a mix-up attack)",
                action="Press Connect to try again.",
            ) from None
        provider.use_dpop_if_offered()  # a fresh key for this sign-in's tokens, when the server takes DPoP
        await self._exchange(provider, code, saved["verifier"])
        if await self.step_up_wanted(server, user):
            await self._vault.put(server, user, STEP_UP, "")  # allowed now
        return server

    async def _exchange(self, provider: Provider, code: str, verifier: str) -> None:
        """The token request of the authorization code grant, sent from here under the endpoint policy."""
        server = provider.policy.server
        request = await provider._exchange_token_authorization_code(code, verifier)
        await provider.policy.check(str(request.url))  # early, in the flow's words
        request.extensions = {**request.extensions, POLICY_KEY: provider.policy}  # and pinned
        try:
            async with httpx2.AsyncClient(
                timeout=URL_WAIT_S, follow_redirects=False, transport=pinned_transport()
            ) as client:
                response = await client.send(request)
                if await provider.nonce_wanted(request, response, resource=False):  # once, with the nonce
                    provider.sign_token_request(request)
                    response = await client.send(request)
        except httpx2.HTTPError as exc:
            raise SignInFailed(
                f"signing in to '{server}' failed: {_unreachable(exc)}", action="Press Connect to try again later."
            ) from None
        try:
            await provider._handle_token_response(response)
        except Exception as exc:
            raise sign_in_failure(server, exc, response) from None


def _pending_value(provider: Provider, verifier: str) -> str:
    """What `finish` needs to exchange the code, wherever it runs."""
    context = provider.context
    return json.dumps(
        {
            "verifier": verifier,
            "scope": context.client_metadata.scope,
            "protocol_version": context.protocol_version,
            "metadata": context.oauth_metadata.model_dump_json(exclude_none=True) if context.oauth_metadata else None,
            "resource": context.protected_resource_metadata.model_dump_json(exclude_none=True)
            if context.protected_resource_metadata
            else None,
            "client": context.client_info.model_dump_json(exclude_none=True) if context.client_info else None,
            "dpop_algs": provider.dpop_algs,
        }
    )


def _restore(provider: Provider, saved: dict[str, Any]) -> None:
    context = provider.context
    context.client_metadata.scope = saved.get("scope")
    context.protocol_version = saved.get("protocol_version")
    if saved.get("metadata"):
        context.oauth_metadata = OAuthMetadata.model_validate_json(saved["metadata"])
    if saved.get("resource"):
        context.protected_resource_metadata = ProtectedResourceMetadata.model_validate_json(saved["resource"])
    if saved.get("client"):
        context.client_info = OAuthClientInformationFull.model_validate_json(saved["client"])
    provider.dpop_algs = saved.get("dpop_algs")


def _unreachable(exc: httpx2.HTTPError) -> str:
    """Which sign-in server could not be reached, and how (the transport's words, no answer body)."""
    where = "its sign-in server"
    try:
        where = f"{exc.request.url.scheme}://{exc.request.url.netloc.decode()}"
    except RuntimeError:
        pass
    if isinstance(exc, httpx2.TimeoutException):
        return f"{where} did not answer in time"
    if isinstance(exc, httpx2.ConnectError):
        return f"{where} could not be reached (it may be down)"
    return f"talking to {where} failed ({type(exc).__name__})"
