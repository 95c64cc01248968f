"""An MCP server that needs sign-in, for the host's tests, served over streamable HTTP on 127.0.0.1.

`--token PORT`: bearer tokens that start with `tok-` are accepted (a user-entered token).
`--oauth PORT [--token-ttl S]`: a real OAuth 2.1 authorization server and protected resource
(fastmcp's in-memory provider: dynamic client registration, PKCE, refresh; it approves every
authorization request at once, as a user who clicks "Allow" would).
`--dpop PORT [--nonce] [--token-ttl S]`: the same as `--oauth` behind a layer that requires
DPoP-bound tokens and a proof on every request (`dpop_guard.py`; `--nonce`: and server nonces).
`--machine PORT --client-id ID --client-secret SECRET`: a protected resource whose authorization
server (on the same port) has one token endpoint for the `client_credentials` grant, with the
client authenticated by HTTP Basic; it issues random tokens that live `--token-ttl` seconds.

Tools say which token and which MCP session served the call, so tests can check that two
users never share either.
"""

from __future__ import annotations

import argparse
import base64
import secrets
import time

import uvicorn
from dpop_guard import DPoPGuard  # beside this file, which always runs as a script
from fastmcp import Context, FastMCP
from fastmcp.server.auth.auth import ClientRegistrationOptions, RemoteAuthProvider
from fastmcp.server.auth.providers import in_memory
from fastmcp.server.auth.providers.debug import DebugTokenVerifier
from fastmcp.server.dependencies import get_access_token
from starlette.requests import Request
from starlette.responses import JSONResponse


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

    @mcp.resource("notes://mine", name="my-notes", description="The signed-in user's own notes")
    def notes() -> str:
        token = get_access_token()
        return f"notes of {token.token if token else 'nobody'}"

    @mcp.prompt(name="my-summary", description="Summarise the signed-in user's notes")
    def summary() -> str:
        return "Summarise my notes."

    return mcp


def machine(port: int, client_id: str, client_secret: str, ttl: int) -> FastMCP:
    """A resource server with its own client_credentials token endpoint."""
    base = f"http://127.0.0.1:{port}"
    issued: dict[str, float] = {}  # token -> when it ends
    verifier = DebugTokenVerifier(validate=lambda token: issued.get(token, 0) > time.time())
    mcp = build(RemoteAuthProvider(token_verifier=verifier, authorization_servers=[base], base_url=base))  # type: ignore[list-item]

    @mcp.custom_route("/.well-known/oauth-authorization-server", methods=["GET"])
    async def metadata(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": base,
                "token_endpoint": f"{base}/token",
                "authorization_endpoint": f"{base}/authorize",
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            }
        )

    @mcp.custom_route("/token", methods=["POST"])
    async def token(request: Request) -> JSONResponse:
        form = await request.form()
        expected = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        if request.headers.get("authorization") != expected:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        value = "m2m-" + secrets.token_urlsafe(16)
        issued[value] = time.time() + ttl
        return JSONResponse({"access_token": value, "token_type": "Bearer", "expires_in": ttl})

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", type=int)
    parser.add_argument("--oauth", type=int)
    parser.add_argument("--dpop", type=int)
    parser.add_argument("--nonce", action="store_true")
    parser.add_argument("--machine", type=int)
    parser.add_argument("--client-id", default="")
    parser.add_argument("--client-secret", default="")
    parser.add_argument("--token-ttl", type=int, default=3600)
    args = parser.parse_args()
    if args.machine:
        mcp = machine(args.machine, args.client_id, args.client_secret, args.token_ttl)
        port = args.machine
    elif args.token:
        mcp = build(DebugTokenVerifier(validate=lambda token: token.startswith("tok-")))
        port = args.token
    else:
        port = args.oauth or args.dpop
        in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = args.token_ttl  # short-lived tokens exercise refresh
        base = f"http://127.0.0.1:{port}"
        mcp = build(
            in_memory.InMemoryOAuthProvider(
                base_url=base,
                client_registration_options=ClientRegistrationOptions(enabled=True),
            )
        )
        if args.dpop:
            uvicorn.run(
                DPoPGuard(mcp.http_app(transport="http"), base, nonce=args.nonce),
                host="127.0.0.1",
                port=port,
                log_level="warning",
            )
            return
    mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False)


if __name__ == "__main__":
    main()
