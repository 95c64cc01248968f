"""The MCP SDK's OAuth providers as this host uses them: every request of their flow passes
the endpoint policy (`oauth_guard`), a pre-registered client's secret only ever goes to the
authorization server named by `auth.issuer`, a token set is only refreshed with the
authorization server that issued it, and the first half of a browser sign-in can stop at
the redirect (`park`) so that any app process can finish it from the stored state.

What the SDK already does and is relied on here (MCP 2026-07-28 authorization): RFC 9207
`iss` validation, the authorization-server metadata's `issuer` checked against the one the
resource names, registered clients stamped with their issuer and registered again when the
resource moves to another authorization server, `offline_access` requested when the
authorization server offers it.  The SDK has no DPoP (RFC 9449): that is `oauth_dpop`'s."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider, PrivateKeyJWTOAuthProvider
from mcp.client.auth.utils import issuers_match, union_scopes
from mcp.shared.auth import OAuthClientMetadata, OAuthToken
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from ...errors import NeedsAuth, SignInFailed
from .dpop_provider import DPoPAuth
from .storage import VaultStorage, margin
from .url_guard import EndpointPolicy, GuardedAuth

__all__ = ["GuardedClientCredentials", "GuardedPrivateKeyJWT", "Parked", "Provider"]

Park = Callable[["Provider", str], Awaitable[None]]  # (provider, PKCE verifier): keep the pending sign-in


class Parked(BaseException):
    """The browser leg started: the pending sign-in is stored and the flow stops.  A
    BaseException so that the SDK, which logs every Exception of its flow as an error, lets it by."""


class Provider(GuardedAuth, DPoPAuth, OAuthClientProvider):
    """One user's provider for one server, with DPoP-bound tokens where the authorization server
    offers them (`oauth_dpop`).  Also told when a token expires, a little early:
    left alone the SDK loads stored tokens without their expiry and checks expiry to the
    second, so it can send a token that is expired by the time the server looks."""

    preregistered = False  # the client is the one in mcp.json (not registered by this host)
    extra_scope: str | None = None  # a step-up: scopes the server asked for beyond what was granted
    issuer: str | None = None  # auth.issuer: the authorization server a pre-registered client belongs to
    park: Park | None = None  # begin(): store the pending sign-in at the redirect and stop

    def __init__(
        self,
        server_url: str,
        client_metadata: OAuthClientMetadata,
        storage: TokenStorage,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[Any]],
        *,
        client_metadata_url: str | None,
        policy: EndpointPolicy,
    ) -> None:
        super().__init__(
            server_url,
            client_metadata,
            storage,
            redirect_handler,
            callback_handler,
            client_metadata_url=client_metadata_url,
            validate_resource_url=self._check_resource,
        )
        self.policy = policy
        self.context.update_token_expiry = self._update_expiry  # type: ignore[method-assign]
        if isinstance(self.context.storage, VaultStorage):
            self.context.storage.context = self.context

    def _update_expiry(self, token: OAuthToken) -> None:
        lifetime = token.expires_in
        self.context.token_expiry_time = time.time() + lifetime - margin(lifetime) if lifetime else None

    async def _check_resource(self, server_url: str, prm_resource: str | None) -> None:
        """RFC 8707/9728: the resource the metadata names must be this server (or a parent of its URL)."""
        expected = resource_url_from_server_url(server_url)
        if prm_resource and not check_resource_allowed(requested_resource=expected, configured_resource=prm_resource):
            raise SignInFailed(
                f"server '{self.policy.server}': its sign-in information is for another server "
                f"({prm_resource[:100]}), not for {expected}; the sign-in was refused so that a "
                "token for one server is never sent to another",
                action="Ask your administrator to check the server's URL in mcp.json.",
            )

    def _select_authorization_server(self, advertised: list[str]) -> str:
        if self.issuer is not None:
            return next((a for a in advertised if issuers_match(a, self.issuer)), advertised[0])
        return advertised[0]

    def _secret_goes_to_its_issuer(self) -> None:
        """A pre-registered client's secret is sent only to the authorization server `auth.issuer` names."""
        info = self.context.client_info
        if not (self.preregistered and info is not None and info.client_secret and self.issuer):
            return
        metadata = self.context.oauth_metadata
        if metadata is not None and issuers_match(str(metadata.issuer), self.issuer):
            return
        found = str(metadata.issuer)[:100] if metadata is not None else "no authorization server metadata"
        self.context.clear_tokens()
        raise SignInFailed(
            f"server '{self.policy.server}': its sign-in leads to {found}, but its client belongs to "
            f"{self.issuer} ('issuer' in mcp.json); the client secret was not sent",
            action="Ask your administrator: the server may have moved to another authorization "
            "server, or its metadata is wrong.",
        )

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
                info.token_endpoint_auth_method = usable[0]

    async def _perform_authorization(self) -> httpx2.Request:
        if self.extra_scope:
            self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, self.extra_scope)
        if self.park is None:
            return await super()._perform_authorization()
        _code, verifier = await self._perform_authorization_code_grant()
        await self.park(self, verifier)
        raise Parked

    async def _exchange_token_authorization_code(self, auth_code: str, code_verifier: str) -> httpx2.Request:
        self._secret_goes_to_its_issuer()
        self._fit_client_authentication()
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    async def _refresh_token(self) -> httpx2.Request:
        storage, metadata = self.context.storage, self.context.oauth_metadata
        issued_by = storage.token_issuer if isinstance(storage, VaultStorage) else None
        if issued_by and metadata is not None and not issuers_match(issued_by, str(metadata.issuer)):
            # never offer one authorization server's refresh token to another
            self.context.clear_tokens()
            raise NeedsAuth(
                f"server '{self.policy.server}' now signs in with another authorization server: "
                "press Connect to sign in again"
            )
        self._secret_goes_to_its_issuer()
        self._fit_client_authentication()
        return await super()._refresh_token()

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        if isinstance(storage, VaultStorage):
            self.context.token_expiry_time = await storage.restore(self.context)


class _MachineGuard(GuardedAuth):
    def __init__(self, *args: Any, policy: EndpointPolicy, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = policy


class GuardedClientCredentials(_MachineGuard, ClientCredentialsOAuthProvider):
    """The `client_credentials` grant with a client secret, its requests under the endpoint policy."""


class GuardedPrivateKeyJWT(_MachineGuard, PrivateKeyJWTOAuthProvider):
    """The `client_credentials` grant with a signed assertion, its requests under the endpoint policy."""
