"""`GET /metrics`: Prometheus text, for administrators or a scraper holding the metrics token."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response

from ..errors import Forbidden, Unauthorized
from ..telemetry import METRICS_CONTENT_TYPE, metrics_text
from .deps import services_of
from .readiness import is_admin_request

__all__ = ["router"]

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    token = services_of(request).settings.metrics_token
    sent = request.headers.get("authorization", "")
    if token is not None and sent.lower().startswith("bearer "):
        if hmac.compare_digest(sent[7:].strip().encode(), token.get_secret_value().encode()):
            return Response(metrics_text(), media_type=METRICS_CONTENT_TYPE)
        raise Unauthorized("wrong metrics token", action="Send SWITCHBOARD_METRICS_TOKEN as 'Authorization: Bearer ...'.")
    if not await is_admin_request(request):
        raise Forbidden("only administrators or a scraper with the metrics token may read /metrics",
                        action="Set SWITCHBOARD_METRICS_TOKEN and send it as 'Authorization: Bearer ...'.")  # fmt: skip
    return Response(metrics_text(), media_type=METRICS_CONTENT_TYPE)
