"""`POST /internal/compress-chat` DTOs (`docs/api.md`, chat compression): snake_case, like Kotlin's @SerialName."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.schemas.kotlin import ChatHistoryMessage


class CompressChatRequest(BaseModel):
    """`CompressChatRequestDto`: `messages` is required; the ids only label logs."""

    model_config = ConfigDict(extra="ignore")

    messages: list[ChatHistoryMessage]
    previous_summary: str | None = None
    client_id: str = ""
    task_id: str = ""

    @field_validator("client_id", "task_id", mode="before")
    @classmethod
    def _null_id(cls, value: Any) -> Any:
        return "" if value is None else value


class CompressChatResponse(BaseModel):
    """`CompressChatResponseDto`: `summary` is required and never null; lists never null."""

    summary: str
    key_decisions: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    is_checkpoint: bool = False
    checkpoint_reason: str | None = None
