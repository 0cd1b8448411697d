"""The agent-runner interface: one coding step on a workspace, whatever runs it (spec §10)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, Field

LogSink = Callable[[str], None]


class AgentJob(BaseModel):
    thread_id: str
    task_id: str
    client_id: str
    project_id: str | None = None
    goal_index: int = 0
    step_index: int = 0
    agent_type: str
    workspace: Path
    allow_git: bool = False
    timeout_seconds: float = 600


class AgentResult(BaseModel):
    success: bool
    summary: str
    changed_files: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    log_tail: str = ""


class AgentRunner(Protocol):
    async def run(self, job: AgentJob, *, on_log: LogSink | None = None) -> AgentResult:
        """Run the agent to completion. Cancelling the awaiting task stops the agent."""
        ...
