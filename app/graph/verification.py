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
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.agents.base import AgentJob
from app.agents.control import should_detach
from app.agents.outcome import uncleaned
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


#: A test run's deadline once the run has seen the tests end by themselves: this many times the
#: longest such run, never below TEST_TIMEOUT_FLOOR_SECONDS nor above TEST_TIMEOUT_SECONDS. A change
#: that makes the tests hang (an endless loop, seen on the benchmark: 150 s and gigabytes before the
#: kernel killed it) then costs a minute, not the whole deadline.
TEST_DEADLINE_FACTOR = 10.0
#: The runner's own deadline is later than the test command's, so the entrypoint stops the tests
#: itself (its group, SIGKILL 5 s after SIGTERM) and says they timed out, not that it was stopped.
RUNNER_GRACE_SECONDS = 15


@dataclass(frozen=True)
class TestRun:
    outcome: Literal["passed", "failed", "not_run"]
    command: str
    summary: str
    output: str
    """The command's last output, bounded (fed back to the agent when the tests failed)."""
    seconds: float | None = None
    """How long the tests ran when they ended by themselves (passed or failed, not stopped)."""


def deadline_for_tests(limit: float, floor: float, longest: float | None) -> float:
    """The deadline of the next test run: the setting, or a multiple of the longest run seen."""
    if not longest:
        return limit
    return min(limit, math.ceil(max(floor, TEST_DEADLINE_FACTOR * longest)))


async def run_tests(ctx: RunContext, *, command: TestCommand, workspace: Path, step: CodingStep, thread_id: str,
                    task: TaskDict, goal_index: int, attempt: int, on_log: Any = None,
                    longest: float | None = None) -> TestRun:
    """The project's tests on the workspace as the step left it; `longest` is the longest earlier
    run of this command that ended by itself (it sets the deadline, `deadline_for_tests`)."""
    agent = step.agent_type or "aider"  # the image the agent worked in has the project's toolchain
    settings = ctx.settings
    deadline = deadline_for_tests(settings.test_timeout_seconds, settings.test_timeout_floor_seconds, longest)
    job = AgentJob(thread_id=thread_id, task_id=task["id"], client_id=task["client_id"],
                   project_id=task.get("project_id"), goal_index=goal_index, step_index=step.index,
                   agent_type=agent, workspace=workspace, mode="test", attempt=attempt, revision=step.revision,
                   timeout_seconds=math.ceil(deadline) + RUNNER_GRACE_SECONDS)
    brief = StepBrief(agent_type="test", instructions=f"Run the project's tests: {command.label()}",
                      task={"id": task["id"], "thread_id": thread_id, "goal_index": goal_index,
                            "step_index": step.index, "attempt": attempt},
                      test_plan={"command": command.json_command(), "timeout_seconds": deadline})

    async def prepare() -> None:
        await ctx.workspaces.check_links(workspace)
        ctx.workspaces.prepare(workspace, brief)

    started = time.monotonic()
    left: str | None = None  # what the cleanup could not remove
    try:
        result = await ctx.runner.run(job, prepare=prepare, on_log=on_log)
    except Exception as exc:  # the runner failed, not the tests: the agent's code is not to blame
        log.exception("the test run could not be started")
        return TestRun(outcome="not_run", command=command.label(), summary=f"{type(exc).__name__}: {exc}", output="")
    finally:
        if not should_detach():  # a suspended run's test process still reads and writes .jervis/
            left = ctx.workspaces.cleanup(workspace)
    result = uncleaned(result, left)
    outcome = result.test_outcome if result.test_outcome in ("passed", "failed", "not_run") else (
        "passed" if result.success else "failed")
    output = result.log_tail[-TEST_OUTPUT_CHARS:]
    seconds = time.monotonic() - started if _ran_whole(outcome, result.summary, output) else None
    return TestRun(outcome=outcome, command=command.label(), summary=result.summary, output=output,  # type: ignore[arg-type]
                   seconds=seconds)


#: A test runner's summary that says tests ran to their end: unittest's "Ran 21 tests in 0.004s",
#: pytest's "3 failed, 18 passed in 0.12s", Go's "ok  pkg 0.01s" / "FAIL pkg 0.01s".
_TESTS_RAN = re.compile(r"^Ran [1-9]\d* tests? in |\b\d+ (?:passed|failed)\b.* in [\d.]+s|^(?:ok|FAIL)\s+\S+\s+[\d.]+s",
                        re.MULTILINE)


def _ran_whole(outcome: str, summary: str, output: str) -> bool:
    """Whether a test run is a measure of the suite: it passed, or it failed after running the
    tests (not at an import error in half a second, before a slow suite could even start)."""
    if outcome == "passed":
        return True
    stopped = summary.startswith(("Tests timed out", "Tests stopped"))
    return outcome == "failed" and not stopped and _TESTS_RAN.search(output) is not None


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
