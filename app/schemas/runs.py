"""`GET /runs`: recent runs for people and the terminal client (an extension, not in the Kotlin
contract). Unlike `/status`, values keep their JSON types: percent is a number, absent text null."""

from __future__ import annotations

from pydantic import BaseModel, Field


class NodeUsage(BaseModel):
    """Where a run's time went at one node (all its runs together)."""

    node: str
    seconds: float
    """Wall time inside the node."""
    llm_calls: int
    llm_tokens: int
    llm_seconds: float


class RunUsage(BaseModel):
    llm_calls: int
    llm_tokens: int
    llm_cost_usd: float
    seconds: float
    """The run's working time so far (waiting for the user excluded)."""
    nodes: list[NodeUsage] = Field(default_factory=list)
    """In the order the run reached them."""


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
    usage: RunUsage | None = None
    """Model use and time per node (null before the run recorded any)."""


class RunList(BaseModel):
    runs: list[RunSummary] = Field(default_factory=list)
