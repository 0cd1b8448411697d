"""`/correction/*` (kotlin-contract.md §2.7): camelCase in and out. A failing KB or model is a
502 with `detail` (Kotlin only needs a non-2xx); bad input is the app's readable 422."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from app.api.deps import CorrectionServiceDep
from app.correction.errors import CorrectionUpstreamError
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

router = APIRouter(prefix="/correction", tags=["correction"])


def _bad_gateway(exc: CorrectionUpstreamError) -> HTTPException:
    return HTTPException(status_code=502, detail=str(exc))


@router.post("/submit", response_model=CorrectionSubmitResult)
async def submit(request: CorrectionSubmitRequest, service: CorrectionServiceDep) -> CorrectionSubmitResult:
    try:
        return await service.submit(request)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc


@router.post("/correct", response_model=CorrectionResult)
async def correct(request: CorrectionRequest, service: CorrectionServiceDep) -> CorrectionResult:
    try:
        return await service.correct(request)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc


@router.post("/correct-targeted", response_model=CorrectionResult)
async def correct_targeted(request: CorrectionTargetedRequest, service: CorrectionServiceDep) -> CorrectionResult:
    try:
        return await service.correct_targeted(request)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc


@router.post("/list", response_model=CorrectionListResult)
async def list_corrections(request: CorrectionListRequest, service: CorrectionServiceDep) -> CorrectionListResult:
    try:
        return await service.list_rules(request)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc


@router.post("/delete")
async def delete(request: CorrectionDeleteRequest, service: CorrectionServiceDep) -> dict[str, Any]:
    try:
        return await service.delete(request.source_urn)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc


@router.post("/answer", response_model=CorrectionAnswerResult)
async def answer(request: CorrectionAnswerRequest, service: CorrectionServiceDep) -> CorrectionAnswerResult:
    try:
        return await service.answer(request)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc


@router.post("/instruct", response_model=CorrectionInstructResult)
async def instruct(request: CorrectionInstructRequest, service: CorrectionServiceDep) -> CorrectionInstructResult:
    try:
        return await service.instruct(request)
    except CorrectionUpstreamError as exc:
        raise _bad_gateway(exc) from exc
