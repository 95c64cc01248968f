"""Whether a remote MCP server asks for an OAuth sign-in (MCP authorization): it answers 401, and
its protected-resource metadata (RFC 9728: where its WWW-Authenticate names, else at the well-known
addresses) names an authorization server. Asked when a user adds a server that did not answer MCP:
such a server is kept, for its owner to sign in to with Connect (`oauth.SignIns`).

Every request passes the endpoint policy and goes to the address it checked (`PinnedTransport`);
redirects are not followed (the SDK's own discovery does not follow them either), and an answer is
read up to METADATA_BYTES only."""

from __future__ import annotations

import httpx2
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
)
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import ValidationError

from ..errors import SignInFailed
from .oauth.url_guard import POLICY_KEY, EndpointPolicy, pinned_transport

__all__ = ["asks_for_sign_in"]

WAIT_S = 15.0
METADATA_BYTES = 64 * 1024
_PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def asks_for_sign_in(url: str, policy: EndpointPolicy, headers: dict[str, str] | None = None) -> bool:
    """True when the server at `url` wants an OAuth sign-in that the Connect flow can do."""
    marked = {POLICY_KEY: policy}
    async with httpx2.AsyncClient(timeout=WAIT_S, follow_redirects=False, transport=pinned_transport()) as client:
        try:
            request = client.build_request(
                "POST",
                url,
                json=_PING,
                headers={**(headers or {}), "Accept": "application/json, text/event-stream"},
                extensions=marked,
            )
            first = await client.send(request)
            await first.aclose()
        except (httpx2.HTTPError, SignInFailed):
            return False
        if first.status_code != 401:
            return False
        named = extract_resource_metadata_from_www_auth(first)
        for candidate in build_protected_resource_metadata_discovery_urls(named, url):
            try:
                metadata = await _metadata(client, client.build_request("GET", candidate, extensions=marked))
            except (httpx2.HTTPError, SignInFailed):
                continue  # refused by the policy, or not there: the next address
            if metadata is not None and metadata.authorization_servers:
                return True
    return False


async def _metadata(client: httpx2.AsyncClient, request: httpx2.Request) -> ProtectedResourceMetadata | None:
    response = await client.send(request, stream=True)
    try:
        if response.status_code != 200:
            return None
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > METADATA_BYTES:
                return None
    finally:
        await response.aclose()
    try:
        return ProtectedResourceMetadata.model_validate_json(body)
    except ValidationError:
        return None
