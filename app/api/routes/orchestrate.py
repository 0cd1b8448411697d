"""`POST /orchestrate/stream` (fire and forget, what Kotlin uses) and `POST /orchestrate` (blocking)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import RunManagerDep, SettingsDep
from app.api.limits import check_text_lengths
from app.schemas.kotlin import OrchestrateRequest, OrchestrateResponse, StepResultOut, StreamStartResponse

router = APIRouter(tags=["orchestrate"])


@router.post("/orchestrate/stream", response_model=StreamStartResponse)
async def start_orchestration(request: OrchestrateRequest, runs: RunManagerDep,
                              settings: SettingsDep) -> StreamStartResponse:
    check_text_lengths(settings.max_text_chars, query=request.query)
    run = await runs.start(request)
    thread_id = run.identity.thread_id
    return StreamStartResponse(thread_id=thread_id, stream_url=f"/stream/{thread_id}")


@router.post("/orchestrate")
async def orchestrate_blocking(request: OrchestrateRequest, runs: RunManagerDep,
                               settings: SettingsDep) -> dict[str, Any]:
    check_text_lengths(settings.max_text_chars, query=request.query)
    run = await runs.start(request)
    outcome = await runs.wait(run)
    thread_id = run.identity.thread_id
    if outcome.status == "interrupted":
        return {"task_id": request.task_id, "status": "interrupted", "thread_id": thread_id,
                "interrupt": outcome.interrupt or {}, "summary": "Waiting for user approval"}
    return OrchestrateResponse(
        task_id=request.task_id, success=outcome.status == "done",
        summary=outcome.summary or outcome.report or outcome.error or "", branch=outcome.branch,
        artifacts=outcome.artifacts,
        step_results=[StepResultOut.model_validate(r) for r in outcome.step_results], thread_id=thread_id,
    ).model_dump()
