"""Resume, cancel and the status safety net for one thread; the list of recent runs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import RunManagerDep, RunViewsDep, SettingsDep
from app.api.limits import check_text_lengths
from app.persistence.runs import RunStatus
from app.schemas.kotlin import ApprovalResponse
from app.schemas.runs import RunDetail, RunDiff, RunList

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
async def read_runs(views: RunViewsDep, limit: Annotated[int, Query(ge=1, le=200)] = 20,
                    status: Annotated[RunStatus | None, Query(description="Only runs in this status")] = None,
                    ) -> RunList:
    """Recent runs, newest first (not part of the Kotlin contract)."""
    return await views.recent(limit, status)


@router.get("/runs/{thread_id}", response_model=RunDetail)
async def read_run(thread_id: str, views: RunViewsDep) -> RunDetail:
    """One run for a person: its plan (goals, waves, steps, attempts), question, budget and report."""
    return await views.detail(thread_id)


@router.get("/runs/{thread_id}/diff", response_model=RunDiff)
async def read_run_diff(thread_id: str, views: RunViewsDep) -> RunDiff:
    """The run's change as unified diffs: the whole run, each finished goal, each step."""
    return await views.diff(thread_id)
