"""The baseline for the MCP conformance suite's client scenarios: a plain fastmcp
client, with fastmcp's own OAuth and client-credentials providers, and the
browser leg done the way the suite's reference client does it (fetch the
authorization URL, read the code from the redirect).

Run by the suite as `python plain_client.py <server url>`; the scenario's name is
in MCP_CONFORMANCE_SCENARIO and its data (pre-registered clients) in
MCP_CONFORMANCE_CONTEXT.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from fastmcp import Client
from fastmcp.client.auth import OAuth
from fastmcp.client.auth.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from fastmcp.client.elicitation import ElicitResult
from mcp.shared.auth import AuthorizationCodeResult

CIMD_URL = "https://conformance-test.local/client-metadata.json"  # the URL the suite's CIMD scenario expects


class _HeadlessOAuth(OAuth):
    """fastmcp's OAuth with the browser replaced by one GET that reads the code from the redirect."""

    _result: AuthorizationCodeResult | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient() as client:
            response = await client.get(authorization_url, follow_redirects=False)
        query = parse_qs(urlsplit(response.headers.get("location", "")).query)
        self._result = AuthorizationCodeResult(
            code=query.get("code", [""])[0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    async def callback_handler(self) -> AuthorizationCodeResult:
        if self._result is None:
            raise RuntimeError("the authorization server did not redirect back with a code")
        return self._result


async def _accept_as_offered(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult[Any]:
    """A user who accepts the form as offered (with its defaults)."""
    return ElicitResult(action="accept", content={})


async def main(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    auth: httpx2.Auth | None = None
    if scenario == "auth/client-credentials-jwt":
        signer = SignedJWTParameters(
            issuer=context["client_id"],
            subject=context["client_id"],
            signing_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        auth = PrivateKeyJWTOAuthProvider(
            url, client_id=context["client_id"], assertion_provider=signer.create_assertion_provider()
        )
    elif scenario.startswith("auth/client-credentials"):
        auth = ClientCredentialsOAuthProvider(
            url, client_id=context["client_id"], client_secret=context.get("client_secret", "")
        )
    elif scenario == "auth/pre-registration":
        auth = _HeadlessOAuth(url, client_id=context["client_id"], client_secret=context.get("client_secret"))
    elif scenario.startswith("auth/"):
        auth = _HeadlessOAuth(url, client_metadata_url=CIMD_URL)
    async with Client(url, auth=auth, elicitation_handler=_accept_as_offered) as client:
        tools = await client.list_tools()
        names = {tool.name for tool in tools}
        for name in ("test-tool", "test_tool", "add_numbers", "test_client_elicitation_defaults"):
            if name in names:
                await client.call_tool(name, {"a": 1, "b": 2} if name == "add_numbers" else {}, raise_on_error=False)
        focal = next((tool for tool in tools if tool.name == "json_schema_2020_12_tool"), None)
        if focal is not None and "json_schema_echo" in names:  # echo the schema as the client holds it
            await client.call_tool("json_schema_echo", {"schema": focal.input_schema}, raise_on_error=False)
        for call in context.get("toolCalls") or []:  # the calls a scenario asks for, with its arguments
            if call["name"] in names:
                await client.call_tool(call["name"], call.get("arguments") or {}, raise_on_error=False)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    asyncio.run(main(sys.argv[1]))
