"""An MCP server that needs sign-in, for the host's tests, served over streamable HTTP on 127.0.0.1.

`--token PORT`: bearer tokens that start with `tok-` are accepted (a user-entered token).
`--oauth PORT [--token-ttl S]`: a real OAuth 2.1 authorization server and protected resource
(fastmcp's in-memory provider: dynamic client registration, PKCE, refresh; it approves every
authorization request at once, as a user who clicks "Allow" would).

Tools say which token and which MCP session served the call, so tests can check that two
users never share either.
"""

from __future__ import annotations

import argparse

from fastmcp import Context, FastMCP
from fastmcp.server.auth.auth import ClientRegistrationOptions
from fastmcp.server.auth.providers import in_memory
from fastmcp.server.auth.providers.debug import DebugTokenVerifier
from fastmcp.server.dependencies import get_access_token


def build(auth: object) -> FastMCP:
    mcp = FastMCP("signin", auth=auth)  # type: ignore[arg-type]

    @mcp.tool(annotations={"readOnlyHint": True})
    def whoami(ctx: Context) -> dict[str, str]:
        """The token and MCP session that carried this call."""
        token = get_access_token()
        return {"token": token.token if token else "", "session": ctx.session_id}

    @mcp.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", type=int)
    parser.add_argument("--oauth", type=int)
    parser.add_argument("--token-ttl", type=int, default=3600)
    args = parser.parse_args()
    if args.token:
        mcp = build(DebugTokenVerifier(validate=lambda token: token.startswith("tok-")))
        port = args.token
    else:
        port = args.oauth
        in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = args.token_ttl  # short-lived tokens exercise refresh
        base = f"http://127.0.0.1:{port}"
        mcp = build(in_memory.InMemoryOAuthProvider(
            base_url=base,
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ))  # fmt: skip
    mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False)


if __name__ == "__main__":
    main()
