"""Connecting a user's own account to a remote MCP server: a user-entered token,
or the OAuth browser leg (connect -> authorization server -> callback), and
forgetting it again.  The credential itself never comes back out of these routes."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse
from pydantic import BaseModel, Field

from ..errors import BadRequest, NotFound, SwitchboardError
from ..identity.access import Access
from ..identity.users import User
from ..services import Services
from .deps import current_user, services_of

__all__ = ["auth_entry", "router"]

router = APIRouter()
UserDep = Annotated[User, Depends(current_user)]


class TokenBody(BaseModel):
    # Printable ASCII without spaces: it goes into an HTTP header, and nothing else fits there.
    token: str = Field(min_length=1, max_length=8192, pattern=r"^[\x21-\x7e]+$")


def _server(services: Services, user: User, name: str) -> Any:
    config = services.config.mcp.servers.get(name)
    access = Access(user, None, services.config.compliance)
    if config is None or not access.may_use_server(config):
        raise NotFound(f"there is no server named '{name}' that you may use")
    if config.auth is None or not config.sessions_per_user:
        raise BadRequest(
            f"server '{name}' does not take your own credential",
            action="Nothing to connect: it is shared and set up by your administrator.",
        )
    return config


async def auth_entry(services: Services, user: User, name: str) -> dict[str, Any] | None:
    """`auth` of /api/config for one server: its type, whether this user is connected, and
    where to connect.  Never the credential."""
    config = services.config.mcp.servers.get(name)
    if config is None or config.auth is None or not config.sessions_per_user:
        return None
    connected = await services.pool.connected(name, user.email)
    mine = await services.pool.user_status(name, user.email)
    entry: dict[str, Any] = {"type": config.auth.type, "connected": connected}
    if connected and mine.status == "needs_auth":  # refused, or more permissions wanted: connect again
        entry["connected"], entry["refused"] = False, mine.reason or "the server refused your credential"
    if config.auth.type == "oauth":
        entry["connect_url"] = f"/api/servers/{name}/connect"
    else:
        entry["token_url"] = f"/api/servers/{name}/token"
    entry["disconnect_url"] = f"/api/servers/{name}/connection"
    return entry


@router.put("/api/servers/{name}/token")
async def put_token(name: str, body: TokenBody, request: Request, user: UserDep) -> dict[str, Any]:
    services = services_of(request)
    config = _server(services, user, name)
    if config.auth.type != "user_token":
        raise BadRequest(f"server '{name}' signs in with OAuth, not a token", action="Press Connect instead.")
    refused = await services.pool.set_user_token(name, user.email, body.token)
    if refused is not None:
        return {"server": name, "connected": False, "refused": refused}
    services.audit.record("token_connect", user=user.email, server=name)
    return {"server": name, "connected": True}


@router.delete("/api/servers/{name}/connection")
async def disconnect(name: str, request: Request, user: UserDep) -> dict[str, Any]:
    services = services_of(request)
    config = _server(services, user, name)
    await services.pool.disconnect(name, user.email)
    services.audit.record(
        "oauth_disconnect" if config.auth.type == "oauth" else "token_disconnect", user=user.email, server=name
    )
    return {"server": name, "connected": False}


_TO_SIGN_IN: dict[int | str, dict[str, Any]] = {303: {"description": "to the server's authorization server"}}
_BACK_TO_CHAT: dict[int | str, dict[str, Any]] = {303: {"description": "back to the chat page, saying how it went"}}


@router.get("/api/servers/{name}/connect", status_code=303, response_class=RedirectResponse, responses=_TO_SIGN_IN)
async def connect(name: str, request: Request, user: UserDep) -> RedirectResponse:
    """Start the OAuth sign-in: a redirect to the server's authorization server."""
    services = services_of(request)
    config = _server(services, user, name)
    if config.auth.type != "oauth":
        raise BadRequest(f"server '{name}' takes a token, not a sign-in", action="Enter your token in the tools panel.")
    try:
        url = await services.pool.begin_sign_in(name, user.email)
    except SwitchboardError as exc:
        return _back_with_notice(services, user, f"Could not connect '{name}'", exc)
    return RedirectResponse(url, status_code=302)


def _back_with_notice(services: Services, user: User, what: str, exc: SwitchboardError) -> RedirectResponse:
    """To the chat page, which says what happened (a browser followed Connect or came back
    from the authorization server: a JSON error page would strand it)."""
    text = f"{what}: {exc.message}" + (f" {exc.action}" if exc.action else "")
    sealed = services.signer.seal_notice(user.email, text)
    return RedirectResponse(f"/?{urlencode({'signin_notice': sealed})}", status_code=303)


@router.get("/oauth/client-metadata.json")
async def client_metadata(request: Request) -> JSONResponse:
    """This host's client ID metadata document: authorization servers that take one fetch it
    to learn the client (its name and the only callback it may be sent back to).  Public, as
    the OAuth client ID it describes is."""
    document = services_of(request).pool.sign_ins.client_metadata_document()
    if document is None:
        raise NotFound("this host publishes no client ID metadata document (PUBLIC_URL is not https)")
    return JSONResponse(document, headers={"Cache-Control": "public, max-age=3600"})


@router.get("/oauth/callback", status_code=303, response_class=RedirectResponse, responses=_BACK_TO_CHAT)
async def callback(
    request: Request,
    user: UserDep,
    state: str = Query(default=""),
    code: str = Query(default=""),
    error: str = Query(default=""),
    iss: str | None = Query(default=None),
) -> RedirectResponse:
    """The authorization server sends the browser back here.  `state` must be one this
    user started (single use); the code is exchanged server-side with the kept PKCE verifier."""
    services = services_of(request)
    try:
        server = await services.pool.finish_sign_in(user.email, state=state, code=code, error=error, iss=iss)
    except SwitchboardError as exc:
        return _back_with_notice(services, user, "Signing in did not work", exc)
    services.audit.record("oauth_connect", user=user.email, server=server)
    return RedirectResponse(f"/?{urlencode({'connected': server})}", status_code=303)
