"""`GET /metrics`: Prometheus text exposition (metric names in docs/operations.md)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from app.api.deps import MetricsDep
from app.observability.metrics import CONTENT_TYPE

router = APIRouter(tags=["operations"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
async def read_metrics(metrics: MetricsDep) -> Response:
    return Response(await metrics.render(), media_type=CONTENT_TYPE)
