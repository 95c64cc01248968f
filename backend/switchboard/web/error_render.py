"""Every error's wire answer is made here: `render(error, style)`.

The error is one of the tree (errors.py: its `code`, `status`, `rpc_code`) or an `error` event
that ended a turn (its `code` gives the status). The style is the door's:

- `api`: `{"error": {"code", "message", "action"}}` with the error's status (`/api/...`, pages);
- `openai`: OpenAI's `{"error": {"message", "type", "param", "code"}}` (`/v1/...`; the same
  body is a streamed completion's error frame);
- `rpc`: a JSON-RPC error `{"error": {"code", "message", "data": {"action"}}}` (an MCP App's
  `POST /api/apps/{call_id}/rpc`): a refusal keeps its status, a failure is 502.

`style_for(path)` picks the style of a request from its path, so a refusal made before any route
runs (the edge guard, the body limit, sign-in, the router's 404/405) answers as its route would.
The websocket and `/api/chat`'s stream carry errors as `error` events (`ErrorEvent.of`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ..chat.events import ErrorEvent
from ..errors import RPC_INTERNAL, SwitchboardError, status_for_code

__all__ = ["ErrorBody", "ErrorDetail", "Style", "WireError", "render", "style_for"]

Style = Literal["api", "openai", "rpc"]
_RPC_PATH = re.compile(r"^/api/apps/[^/]+/rpc$")
_OPENAI_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


class ErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class ErrorBody(BaseModel):
    """An error on `/v1` (OpenAI's shape); the action is the message's last sentence."""

    error: ErrorDetail


@dataclass(frozen=True, slots=True)
class WireError:
    status: int
    body: dict[str, Any]

    def json(self) -> bytes:
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode()  # as JSONResponse

    def response(self, headers: Mapping[str, str] | None = None) -> JSONResponse:
        return JSONResponse(self.body, status_code=self.status, headers=headers)


def style_for(path: str) -> Style:
    if path.startswith("/v1/"):
        return "openai"
    if _RPC_PATH.match(path):
        return "rpc"
    return "api"


def render(error: SwitchboardError | ErrorEvent, style: Style, **extra: str) -> WireError:
    """`extra`: more fields of the app's error body (the unhandled error's `request_id`)."""
    if isinstance(error, ErrorEvent):
        status, rpc_code = status_for_code(error.code), RPC_INTERNAL
    else:
        status, rpc_code = error.status, error.rpc_code
    code, message, action = error.code, error.message, error.action
    match style:
        case "api":
            return WireError(status, {"error": {"code": code, "message": message, "action": action, **extra}})
        case "openai":
            text = f"{message}. {action}" if action else message
            detail = ErrorDetail(message=text, type=_OPENAI_TYPE.get(status, "api_error"), code=code)
            return WireError(status, {"error": detail.model_dump()})
        case "rpc":
            rpc: dict[str, Any] = {"code": rpc_code, "message": message}
            if action:
                rpc["data"] = {"action": action}
            return WireError(502 if rpc_code == RPC_INTERNAL else status, {"error": rpc})
