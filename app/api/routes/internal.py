"""`POST /internal/compress-chat` (`docs/api.md`, chat compression; snake_case)."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import ChatCompressorDep
from app.api.errors import UPSTREAM_RESPONSES
from app.schemas.chat import CompressChatRequest, CompressChatResponse

router = APIRouter(tags=["internal"])


@router.post("/internal/compress-chat", response_model=CompressChatResponse, responses=UPSTREAM_RESPONSES)
async def compress_chat(request: CompressChatRequest, compressor: ChatCompressorDep) -> CompressChatResponse:
    return await compressor.compress(request)
