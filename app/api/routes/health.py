"""Health endpoints: `/health` is Kotlin's report (always 200, read `status`); `/health/live` and
`/health/ready` are the Kubernetes and Docker probes (answer by status code)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from app.api.deps import HealthDep

router = APIRouter(tags=["health"])


@router.get("/health")
async def read_health(health: HealthDep) -> dict[str, Any]:
    return await health.report()


@router.get("/health/live")
async def read_liveness() -> dict[str, str]:
    """Answers while the event loop serves requests; no dependency is consulted, so an outage
    elsewhere never gets the pod restarted."""
    return {"status": "alive"}


@router.get("/health/ready", responses={503: {"description": "MongoDB unreachable or shutting down"}})
async def read_readiness(health: HealthDep) -> JSONResponse:
    ready, report = await health.readiness()
    return JSONResponse(report, status_code=200 if ready else 503)
