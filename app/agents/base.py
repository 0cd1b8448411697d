"""The agent-runner interface: one coding (or git) step on a workspace, whatever runs it (spec §10)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

LogSink = Callable[[str], None]
Prepare = Callable[[], None]


class AgentJob(BaseModel):
    thread_id: str
    task_id: str
    client_id: str
    project_id: str | None = None
    goal_index: int = 0
    step_index: int = 0
    agent_type: str
    workspace: Path
    mode: Literal["agent", "commit", "push"] = "agent"
    """`agent` runs the coding agent; `commit` / `push` run the entrypoint's git mode."""
    attempt: int = 0
    timeout_seconds: float = 600
    expect_changes: bool = False
    """A code step that reports success but changed nothing has failed."""

    @property
    def allow_git(self) -> bool:
        return self.mode != "agent"


class AgentResult(BaseModel):
    success: bool
    summary: str
    changed_files: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    cost_usd: float | None = None
    commit_sha: str | None = None
    log_tail: str = ""


class AgentRunner(Protocol):
    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        """Run the step to completion. `prepare` writes the hand-over files and is called only
        when a new agent starts (not when re-attaching to one that already runs). Cancelling
        the awaiting task stops the agent."""
        ...
