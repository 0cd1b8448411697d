"""`GET /health`: Kotlin dispatches only when `status == "ok"`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import HealthDep

router = APIRouter(tags=["health"])


@router.get("/health")
async def read_health(health: HealthDep) -> dict[str, Any]:
    return await health.report()
