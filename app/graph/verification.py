"""What "done" means for a code step beyond the agent's word: the project's tests
(`require_tests`) and an LLM review of the step's diff (`require_review`).

Tests run where the agents run (a Job of the step's agent image on the shared volume, or a
local process), through the entrypoint's test mode, so the orchestrator never executes project
code itself. The command comes from the request's `environment.testCommand`, else from the
workspace (`app/agents/test_command.py`). A review that cannot be read is no verdict, never a
rejection: only a clear "not approved" fails a step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.agents.base import AgentJob
from app.agents.control import should_detach
from app.agents.test_command import TestCommand
from app.agents.workspace import StepBrief
from app.graph import prompts
from app.graph.context import RunContext
from app.graph.state_parts import TaskDict
from app.llm.budget import BudgetExceededError
from app.llm.provider import LlmError, Message
from app.schemas.domain import CodingStep, ReviewVerdict

log = logging.getLogger(__name__)

TEST_OUTPUT_CHARS = 3000
REVIEW_DIFF_CHARS = 8000


@dataclass(frozen=True)
class TestRun:
    outcome: Literal["passed", "failed", "not_run"]
    command: str
    summary: str
    output: str
    """The command's last output, bounded (fed back to the agent when the tests failed)."""


async def run_tests(ctx: RunContext, *, command: TestCommand, workspace: Path, step: CodingStep, thread_id: str,
                    task: TaskDict, goal_index: int, attempt: int, on_log: Any = None) -> TestRun:
    """The project's tests on the workspace as the step left it."""
    agent = step.agent_type or "aider"  # the image the agent worked in has the project's toolchain
    job = AgentJob(thread_id=thread_id, task_id=task["id"], client_id=task["client_id"],
                   project_id=task.get("project_id"), goal_index=goal_index, step_index=step.index,
                   agent_type=agent, workspace=workspace, mode="test", attempt=attempt, revision=step.revision,
                   timeout_seconds=ctx.settings.test_timeout_seconds)
    brief = StepBrief(agent_type="test", instructions=f"Run the project's tests: {command.label()}",
                      task={"id": task["id"], "thread_id": thread_id, "goal_index": goal_index,
                            "step_index": step.index, "attempt": attempt},
                      test_plan={"command": command.json_command(),
                                 "timeout_seconds": ctx.settings.test_timeout_seconds})

    async def prepare() -> None:
        await ctx.workspaces.check_links(workspace)
        ctx.workspaces.prepare(workspace, brief)

    try:
        result = await ctx.runner.run(job, prepare=prepare, on_log=on_log)
    except Exception as exc:  # the runner failed, not the tests: the agent's code is not to blame
        log.exception("the test run could not be started")
        return TestRun(outcome="not_run", command=command.label(), summary=f"{type(exc).__name__}: {exc}", output="")
    finally:
        if not should_detach():  # a suspended run's test process still reads and writes .jervis/
            ctx.workspaces.cleanup(workspace)
    outcome = result.test_outcome if result.test_outcome in ("passed", "failed", "not_run") else (
        "passed" if result.success else "failed")
    output = result.log_tail[-TEST_OUTPUT_CHARS:]
    return TestRun(outcome=outcome, command=command.label(), summary=result.summary, output=output)  # type: ignore[arg-type]


async def review(ctx: RunContext, *, goal: str, step: str, diff: str, language: str) -> ReviewVerdict | str:
    """The reviewer's verdict on one step, or why there is none (a warning for the report)."""
    if not diff.strip():
        return "no diff to review"
    return await _verdict(ctx, prompts.review(goal=goal, step=step, diff=diff[:REVIEW_DIFF_CHARS], language=language))


async def review_whole(ctx: RunContext, *, request: str, goals: str, tests: str, stat: str, diff: str,
                       language: str) -> ReviewVerdict | str:
    """The reviewer's verdict on an epic's whole change against its goals, or why there is none."""
    if not diff.strip():
        return "no diff to review"
    return await _verdict(ctx, prompts.review_epic(request=request, goals=goals, tests=tests, stat=stat,
                                                   diff=diff[:REVIEW_DIFF_CHARS], language=language))


async def _verdict(ctx: RunContext, messages: list[Message]) -> ReviewVerdict | str:
    try:
        return await ctx.llm.complete_json(messages, ReviewVerdict, max_tokens=prompts.Cap.REVIEW)
    except (LlmError, BudgetExceededError) as exc:  # no verdict is not a rejection
        log.warning("review gave no verdict: %s", exc)
        return str(exc)[:200]
