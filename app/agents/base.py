"""The agent-runner interface: one coding (or git) step on a workspace, whatever runs it (spec §10)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, Field

LogSink = Callable[[str], None]
#: Writes the hand-over files (and resets the workspace for a new attempt) before an agent starts.
Prepare = Callable[[], Awaitable[None]]


class AgentJob(BaseModel):
    thread_id: str
    task_id: str
    client_id: str
    project_id: str | None = None
    goal_index: int = 0
    step_index: int = 0
    agent_type: str
    workspace: Path
    mode: Literal["agent", "test", "commit", "push"] = "agent"
    """`agent` runs the coding agent; `test` the project's tests after it (`require_tests`);
    `commit` / `push` the entrypoint's git mode."""
    attempt: int = 1
    """1-based attempt of the step: every attempt is its own Job / process, never the failed one again."""
    revision: int = 0
    """Plan revision of the step (a replanned step at the same index is a different step)."""
    timeout_seconds: float = 600
    expect_changes: bool = False
    """A code step that reports success but changed nothing has failed."""
    cloud_providers: list[str] = Field(default_factory=list)
    """The cloud providers (`anthropic`, `openai`, `gemini`) the run allows this step's agent: its
    project's rules, a request for the cloud, an approved escalation. Empty: local only. Decides
    whether Claude Code gets its Anthropic key (app/agents/agent_env.py `agent_secret_keys`)."""

    @property
    def allow_git(self) -> bool:
        return self.mode in ("commit", "push")

    @property
    def entrypoint_mode(self) -> str:
        """JERVIS_MODE of the entrypoint."""
        return {"commit": "git", "push": "git"}.get(self.mode, self.mode)


class StopFailure(BaseModel):
    """An agent the runner could not stop: its Job's deletion failed (after retries), so the agent
    may run on, and change its workspace, until its own deadline (`activeDeadlineSeconds`)."""

    job: str
    error: str


class AgentResult(BaseModel):
    success: bool
    summary: str
    changed_files: list[str] = Field(default_factory=list)
    exit_code: int | None = None
    cost_usd: float | None = None
    tokens: dict[str, int] | None = None
    """`{"sent", "received"}` the agent reported using; counted in the run's budget (execute_step)."""
    commit_sha: str | None = None
    log_tail: str = ""
    test_outcome: str | None = None
    """Test runs: passed | failed | not_run."""
    unchanged: bool = False
    """The agent reported success but changed no file where changes were expected (a failure;
    `summary` is the agent's own, the caller words the failure in the run's language)."""
    program: str | None = None
    """The program that ran the step (`aider`, `openhands`, `claude`, a Job's image), when it is not
    simply the step's agent type: the local runner maps types to programs and falls back."""
    fallback: str | None = None
    """Why `program` is not the one planned for the step's type (e.g. its install failed)."""
    not_stopped: StopFailure | None = None
    """The runner stopped the agent (timeout, stall, no start) but could not delete its Job: the
    caller says, in the run's language, that the agent may still be running."""


class AgentRunner(Protocol):
    def program(self, agent_type: str) -> str:
        """The program that will run a step of `agent_type` (for progress and the terminal client):
        on the local runner what `LOCAL_AGENTS` maps it to (or its fallback), on Kubernetes the type's image."""
        ...

    async def run(self, job: AgentJob, *, prepare: Prepare, on_log: LogSink | None = None) -> AgentResult:
        """Run the step to completion. `prepare` writes the hand-over files and is awaited only
        when a new agent starts (not when re-attaching to one that already runs). Cancelling
        the awaiting task stops the agent, unless the run is being suspended
        (`control.should_detach()`): then the agent is left running for whoever adopts the run."""
        ...
