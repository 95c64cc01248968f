"""The MCP SDK's TokenStorage for this host: users' token sets and registered clients in the
vault (per server and user), and a machine-to-machine server's token in memory.

A stored token set remembers the authorization server that issued it (its metadata, so a
refresh after a restart goes to that server's token endpoint, never to a fallback on the
MCP server's own origin) and is only used with that issuer.  A DPoP-bound token set is stored
with the key it is bound to (`dpop_key`, RFC 9449): one record, sealed together."""

from __future__ import annotations

import json
import time
from typing import Any

from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken, ProtectedResourceMetadata

from ...config.models import OAuthConfig
from .dpop import DPoPKey
from .vault import CredentialVault

__all__ = ["MemoryStorage", "VaultStorage", "margin"]


def margin(lifetime: float) -> float:
    """Refresh this long before a token ends, so it does not expire between our check and the server's."""
    return min(60.0, lifetime / 5)


class VaultStorage:
    """One token set and one registered client per (server, user)."""

    def __init__(
        self,
        vault: CredentialVault,
        server: str,
        user: str,
        auth: OAuthConfig,
        redirect_uri: str,
        *,
        fresh: bool = False,
    ) -> None:
        self._vault, self._server, self._user, self._auth, self._redirect = vault, server, user, auth, redirect_uri
        self._fresh = fresh  # a step-up sign-in: start from no token, so the server asks again
        self.context: OAuthContext | None = None  # the provider's, to learn which issuer a token came from
        self.token_issuer: str | None = None  # the issuer of the token set last read or written
        self.dpop_key: DPoPKey | None = None  # the key the token set last read is bound to; the next one written, too

    async def _stored(self) -> dict[str, Any] | None:
        raw = await self._vault.get(self._server, self._user, "oauth_tokens")
        return json.loads(raw) if raw else None

    async def get_tokens(self) -> OAuthToken | None:
        stored = None if self._fresh else await self._stored()
        self.token_issuer = stored.get("issuer") if stored else None
        self.dpop_key = DPoPKey.from_sealed(stored["dpop_key"]) if stored and stored.get("dpop_key") else None
        return OAuthToken.model_validate(stored["token"]) if stored else None

    async def restore(self, context: OAuthContext) -> float | None:
        """Put what was known when the token was issued back into a new provider's context (its
        authorization server's metadata, the resource's metadata); returns when the token ends."""
        stored = None if self._fresh else await self._stored()
        if not stored:
            return None
        if stored.get("metadata") and context.oauth_metadata is None:
            context.oauth_metadata = OAuthMetadata.model_validate_json(stored["metadata"])
        if stored.get("resource") and context.protected_resource_metadata is None:
            context.protected_resource_metadata = ProtectedResourceMetadata.model_validate_json(stored["resource"])
        return stored.get("expires_at")

    async def set_tokens(self, tokens: OAuthToken) -> None:
        # `expires_in` is relative to when the token was issued: keep the moment it ends.
        lifetime = tokens.expires_in
        expires_at = time.time() + lifetime - margin(lifetime) if lifetime else None
        value: dict[str, Any] = {"token": tokens.model_dump(mode="json"), "expires_at": expires_at}
        context = self.context
        if context is not None and context.oauth_metadata is not None:
            value["issuer"] = str(context.oauth_metadata.issuer)
            value["metadata"] = context.oauth_metadata.model_dump_json(exclude_none=True)
        if context is not None and context.protected_resource_metadata is not None:
            value["resource"] = context.protected_resource_metadata.model_dump_json(exclude_none=True)
        if self.dpop_key is not None:
            value["token_type"] = "DPoP"
            value["dpop_key"] = self.dpop_key.sealed()
        self.token_issuer = value.get("issuer")
        await self._vault.put(self._server, self._user, "oauth_tokens", json.dumps(value))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self._auth.client_id:  # pre-registered in mcp.json
            return OAuthClientInformationFull(
                client_id=self._auth.client_id,
                client_secret=self._auth.client_secret,
                redirect_uris=[self._redirect],  # type: ignore[list-item]
                token_endpoint_auth_method="client_secret_post" if self._auth.client_secret else "none",
            )
        raw = await self._vault.get(self._server, self._user, "oauth_client")
        return OAuthClientInformationFull.model_validate_json(raw) if raw else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if not self._auth.client_id:
            await self._vault.put(self._server, self._user, "oauth_client", client_info.model_dump_json())


class MemoryStorage:
    """A machine-to-machine server's token set, in memory only (it is fetched again with the
    client's own credentials whenever it is missing)."""

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
