"""MCP Apps over HTTP: what the page needs to mount an app (`GET /api/apps/{call_id}`), and the
app's requests through the host (`POST /api/apps/{call_id}/rpc`), answered as JSON-RPC results
or errors. Only the owner of the conversation reaches an app; anyone else gets 404."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from ..auth import User
from ..errors import BadRequest, Forbidden, NotFound, RateLimited, SwitchboardError, ToolNotAllowed
from .deps import current_user, services_of

__all__ = ["router", "rpc_error"]

router = APIRouter(prefix="/api/apps", tags=["apps"])
UserDep = Annotated[User, Depends(current_user)]

MAX_RPC_BYTES = 1_000_000


def rpc_error(exc: SwitchboardError) -> JSONResponse:
    """An error of the tree as HTTP status and JSON-RPC error: 400 malformed (-32600 not a request,
    -32602 bad params), 403 not allowed (-32000), 404 unknown app or method (-32601), 429 rate
    limited (-32000), 502 the server failed (-32603)."""
    if isinstance(exc, BadRequest):
        status, code = 400, getattr(exc, "rpc_code", -32602)
    elif isinstance(exc, Forbidden | ToolNotAllowed):
        status, code = 403, -32000
    elif isinstance(exc, NotFound):
        status, code = 404, -32601
    elif isinstance(exc, RateLimited):
        status, code = 429, -32000
    else:
        status, code = 502, -32603
    error: dict[str, Any] = {"code": code, "message": exc.message}
    if exc.action:
        error["data"] = {"action": exc.action}
    return JSONResponse({"error": error}, status_code=status)


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
        (403, "the app may not do this"),
        (404, "no such app or method"),
        (429, "the app sends too many requests"),
        (502, "the server failed the call"),
    )
}


@router.post("/{call_id}/rpc", response_model=None, openapi_extra=_RPC_BODY, responses=_RPC_ERRORS)
async def app_rpc(request: Request, user: UserDep, call_id: str) -> JSONResponse | dict[str, Any]:
    """One request of the app: `{"method", "params"}` -> `{"result": ...}` or `{"error": {code, message}}`."""
    services = services_of(request)
    raw = await request.body()
    try:
        if len(raw) > MAX_RPC_BYTES:
            raise BadRequest(f"the request is larger than {MAX_RPC_BYTES:,} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            exc = BadRequest("the body is not JSON")
            exc.rpc_code = -32600  # type: ignore[attr-defined]
            raise exc from None
        return await services.apps.rpc(user, call_id, body)
    except SwitchboardError as exc:
        return rpc_error(exc)
