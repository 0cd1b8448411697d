"""`/correction/*` (`docs/api.md`, transcript correction): camelCase in and out. A failing KB or
model is a 502 with `detail` (Kotlin only needs a non-2xx); bad input is the app's readable 422."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from app.api.deps import CorrectionServiceDep, SettingsDep
from app.api.errors import UPSTREAM_RESPONSES
from app.api.limits import check_text_lengths
from app.schemas.correction import (
    CorrectionAnswerRequest,
    CorrectionAnswerResult,
    CorrectionDeleteRequest,
    CorrectionInstructRequest,
    CorrectionInstructResult,
    CorrectionListRequest,
    CorrectionListResult,
    CorrectionRequest,
    CorrectionResult,
    CorrectionSubmitRequest,
    CorrectionSubmitResult,
    CorrectionTargetedRequest,
)

router = APIRouter(prefix="/correction", tags=["correction"], responses=UPSTREAM_RESPONSES)


@router.post("/submit", response_model=CorrectionSubmitResult)
async def submit(request: CorrectionSubmitRequest, service: CorrectionServiceDep,
                 settings: SettingsDep) -> CorrectionSubmitResult:
    check_text_lengths(settings.max_text_chars, original=request.original, corrected=request.corrected,
                       context=request.context)
    return await service.submit(request)


@router.post("/correct", response_model=CorrectionResult)
async def correct(request: CorrectionRequest, service: CorrectionServiceDep) -> CorrectionResult:
    return await service.correct(request)


@router.post("/correct-targeted", response_model=CorrectionResult)
async def correct_targeted(request: CorrectionTargetedRequest, service: CorrectionServiceDep) -> CorrectionResult:
    return await service.correct_targeted(request)


@router.post("/list", response_model=CorrectionListResult)
async def list_corrections(request: CorrectionListRequest, service: CorrectionServiceDep) -> CorrectionListResult:
    return await service.list_rules(request)


@router.post("/delete")
async def delete(request: CorrectionDeleteRequest, service: CorrectionServiceDep) -> dict[str, Any]:
    return await service.delete(request.source_urn)


@router.post("/answer", response_model=CorrectionAnswerResult)
async def answer(request: CorrectionAnswerRequest, service: CorrectionServiceDep) -> CorrectionAnswerResult:
    return await service.answer(request)


@router.post("/instruct", response_model=CorrectionInstructResult)
async def instruct(request: CorrectionInstructRequest, service: CorrectionServiceDep,
                   settings: SettingsDep) -> CorrectionInstructResult:
    check_text_lengths(settings.max_text_chars, instruction=request.instruction)
    return await service.instruct(request)
