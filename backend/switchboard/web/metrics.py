"""`GET /metrics`: Prometheus text, for administrators or a scraper holding the metrics token
(both found by the authentication backend, web/authn.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from ..telemetry import METRICS_CONTENT_TYPE, metrics_text
from .deps import metrics_reader

__all__ = ["router"]

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics(_: Annotated[None, Depends(metrics_reader)]) -> Response:
    return Response(metrics_text(), media_type=METRICS_CONTENT_TYPE)
