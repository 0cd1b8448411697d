"""Resume, cancel and the status safety net for one thread; the list of recent runs."""

from __future__ import annotations

from fastapi import APIRouter, Query

from app.api.deps import RunManagerDep, SettingsDep
from app.api.limits import check_text_lengths
from app.schemas.kotlin import ApprovalResponse
from app.schemas.runs import RunList

router = APIRouter(tags=["runs"])


@router.post("/approve/{thread_id}")
async def approve_run(thread_id: str, approval: ApprovalResponse, runs: RunManagerDep,
                      settings: SettingsDep) -> dict[str, str]:
    check_text_lengths(settings.max_text_chars, modification=approval.modification, reason=approval.reason)
    run = await runs.resume(thread_id, approval)
    return {"status": "resuming" if run is not None else "ended", "thread_id": thread_id}


@router.post("/cancel/{thread_id}")
async def cancel_run(thread_id: str, runs: RunManagerDep) -> dict[str, str]:
    """Kotlin sends no body (with a JSON content type); none is read."""
    await runs.cancel(thread_id)
    return {"status": "cancelled"}


@router.get("/status/{thread_id}")
async def read_status(thread_id: str, runs: RunManagerDep) -> dict[str, str]:
    return await runs.status(thread_id)


@router.get("/runs", response_model=RunList)
async def read_runs(runs: RunManagerDep, limit: int = Query(default=20, ge=1, le=200)) -> RunList:
    """Recent runs, newest first (not part of the Kotlin contract)."""
    return await runs.recent(limit)
