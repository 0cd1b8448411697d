"""Health endpoints: `/health` is Kotlin's report (always 200, read `status`); `/health/live` and
`/health/ready` are the Kubernetes and Docker probes (answer by status code). With `API_TOKEN`
set, the probes stay open (without their detail) and `/health` without the token answers only
`status` and `busy`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.api.auth import is_authenticated
from app.api.deps import HealthDep, RedactorDep

router = APIRouter(tags=["health"])


@router.get("/health")
async def read_health(request: Request, health: HealthDep, redact: RedactorDep) -> dict[str, Any]:
    """The full report (dependency errors may quote a URL or a provider's reply: redacted), or
    only what Kotlin reads to a caller without the API token."""
    report = await health.report()
    if not is_authenticated(request.state):
        return {"status": report["status"], "busy": report["busy"]}
    redacted: dict[str, Any] = redact.data(report)
    return redacted


@router.get("/health/live")
async def read_liveness() -> dict[str, str]:
    """Answers while the event loop serves requests; no dependency is consulted, so an outage
    elsewhere never gets the pod restarted."""
    return {"status": "alive"}


@router.get("/health/ready", responses={503: {"description": "MongoDB unreachable or shutting down"}})
async def read_readiness(request: Request, health: HealthDep, redact: RedactorDep) -> JSONResponse:
    """Answers by status code; the detail (MongoDB's error) only with the API token, if one is set."""
    ready, report = await health.readiness()
    body = redact.data(report) if is_authenticated(request.state) else {"status": report["status"]}
    return JSONResponse(body, status_code=200 if ready else 503)
