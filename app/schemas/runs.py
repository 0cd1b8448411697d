"""`GET /runs`: recent runs for people and the terminal client (an extension, not in the Kotlin
contract). Unlike `/status`, values keep their JSON types: percent is a number, absent text null."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RunSummary(BaseModel):
    thread_id: str
    task_id: str
    client_id: str
    status: str
    percent: float
    branch: str | None = None
    summary: str | None = None
    error: str | None = None
    created_at: str
    """ISO-8601, UTC."""
    updated_at: str


class RunList(BaseModel):
    runs: list[RunSummary] = Field(default_factory=list)
