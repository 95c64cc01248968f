"""MCP Apps over HTTP: what the page needs to mount an app (`GET /api/apps/{call_id}`), and the
app's requests through the host (`POST /api/apps/{call_id}/rpc`), answered as JSON-RPC results
or errors. Only the owner of the conversation reaches an app; anyone else gets 404."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from ..errors import BadRequest, NotARequest
from ..identity.users import User
from .deps import current_user, services_of

__all__ = ["router"]

router = APIRouter(prefix="/api/apps", tags=["apps"])
UserDep = Annotated[User, Depends(current_user)]

MAX_RPC_BYTES = 1_000_000


@router.get("/{call_id}")
async def get_app(request: Request, user: UserDep, call_id: str) -> dict[str, Any]:
    """The app of one of your tool calls: its HTML, CSP, permissions, the tool, its input and result."""
    services = services_of(request)
    return await services.apps.describe(user, call_id)


_RPC_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["method"],
                    "properties": {"method": {"type": "string"}, "params": {"type": "object"}},
                }
            }
        },
    }
}


class RpcErrorDetail(BaseModel):
    code: int = Field(description="JSON-RPC: -32600 not a request, -32602 bad params, -32601 unknown, -32000, -32603")
    message: str
    data: dict[str, Any] | None = Field(default=None, description='`{"action": ...}`: what to do about it')


class RpcError(BaseModel):
    """An app request refused or failed (the signed-in user's own checks answer the app's error model)."""

    error: RpcErrorDetail


_RPC_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": RpcError, "description": says}
    for status, says in (
        (400, "not a JSON-RPC request, or bad params"),
        (401, "no signed-in user"),
        (403, "the app may not do this"),
        (404, "no such app or method"),
        (413, "the request is larger than the limit"),
        (429, "the app sends too many requests"),
        (502, "the server failed the call"),
    )
}


@router.post("/{call_id}/rpc", response_model=None, openapi_extra=_RPC_BODY, responses=_RPC_ERRORS)
async def app_rpc(request: Request, user: UserDep, call_id: str) -> dict[str, Any]:
    """One request of the app: `{"method", "params"}` -> `{"result": ...}` or `{"error": {code, message}}`
    (every error on this path is a JSON-RPC error: error_render.py)."""
    services = services_of(request)
    raw = await request.body()
    if len(raw) > MAX_RPC_BYTES:
        raise BadRequest(f"the request is larger than {MAX_RPC_BYTES:,} bytes")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise NotARequest("the body is not JSON") from None
    return await services.apps.rpc(user, call_id, body)
