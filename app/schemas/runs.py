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
    request: str | None = None
    """The request's first line."""
    waiting: str | None = None
    """The action an `interrupted` run waits on the user for (commit, push, clarify, …)."""
    created_at: str
    """ISO-8601, UTC."""
    updated_at: str
    usage: RunUsage | None = None
    """Model use and time per node (null before the run recorded any)."""


class RunList(BaseModel):
    runs: list[RunSummary] = Field(default_factory=list)


class StepAttempt(BaseModel):
    """One attempt of a step and how it ended."""

    attempt: int
    success: bool
    summary: str
    changed_files: list[str] = Field(default_factory=list)
    agent: str | None = None


class StepView(BaseModel):
    index: int
    """0-based within its goal."""
    title: str
    step_type: str
    status: str
    """"done", "failed" (its last attempt failed), "skipped", "running" or "waiting"."""
    attempts: list[StepAttempt] = Field(default_factory=list)


class GoalView(BaseModel):
    id: str
    title: str
    dependencies: list[str] = Field(default_factory=list)
    wave: int | None = None
    """1-based wave of the approved plan (goals of one wave may run side by side)."""
    status: str
    """"done", "running" or "waiting"."""
    summary: str | None = None
    steps: list[StepView] = Field(default_factory=list)


class Question(BaseModel):
    """What a waiting run asks; answered with `POST /approve/{thread_id}` (the body Kotlin sends)."""

    id: str | None = None
    """The interrupt's id: a new question has a new one, though its action and text may repeat."""
    action: str
    description: str
    clarification: bool
    """A question to answer in words (Kotlin sends approved=true with the text) rather than yes / no."""


class BudgetUse(BaseModel):
    """The run's use against its limits (a null limit: none)."""

    tokens: int
    max_tokens: int | None = None
    cost_usd: float
    max_cost_usd: float | None = None
    seconds: float
    max_seconds: float | None = None


class RunDetail(RunSummary):
    """`GET /runs/{thread_id}`: one run for a person, from its record and its checkpoint."""

    query: str | None = None
    """The whole request."""
    node: str | None = None
    """The node running now (a run executing on this pod)."""
    question: Question | None = None
    answer: dict[str, object] | None = None
    """The last answer taken: approved, when, on which pod (see the 409 of /approve)."""
    goals: list[GoalView] = Field(default_factory=list)
    budget: BudgetUse | None = None
    report: str | None = None
    """The final report (a done run's summary, or what a failed run finished and left)."""
    warnings: list[str] = Field(default_factory=list)
    live: bool = False
    """Whether this pod holds the run's event stream (`/stream/{thread_id}`)."""


class DiffPart(BaseModel):
    label: str
    kind: str
    """"run" (the whole change so far), "goal" or "step"."""
    diff: str


class RunDiff(BaseModel):
    """`GET /runs/{thread_id}/diff`: the run's change as unified diffs, whole and per goal and step."""

    parts: list[DiffPart] = Field(default_factory=list)
    note: str | None = None
    """Why there is no diff (no git repository, no recorded base), when there is none."""
