"""execute_step (spec §7.8): run one step — an LLM answer, a coding agent, or tracker calls."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.agents.base import AgentJob, AgentResult
from app.agents.confinement import WorkspaceEscapeError
from app.agents.control import should_detach
from app.agents.outcome import uncleaned
from app.agents.workspace import StepBrief, WorkspaceError
from app.clients.kotlin import TrackerError
from app.graph import chat, prompts
from app.graph.agent_handover import kb_env, task_brief
from app.graph.earlier_steps import FINDINGS_CHARS, earlier_steps
from app.graph.prompt_context import answer_context
from app.graph.rules import step_changes
from app.graph.rules.request_scope import covering_tests, is_test_file, list_files, named_paths, resolve
from app.graph.rules.test_plan import command_for
from app.graph.rules.tracker_ops import TrackerCall, carry_out
from app.graph.run_state import (
    NodeRuntime,
    agent_cloud,
    current_goal,
    current_step,
    current_thread_id,
    emit,
    run_key,
    run_language,
    task_of,
)
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Inputs, Outcome, Position, Setbacks, UserTerms, WorkDone, rules_of
from app.kb.prefetch import prefetch_kb_context
from app.llm.budget import Usage
from app.llm.provider import LlmError
from app.llm.scope import current_scope
from app.persistence.context_store import ContextStore
from app.schemas.domain import CodingStep, Recovery, StepResult, StepType
from app.texts import texts
from app.texts.clip import clip

log = logging.getLogger(__name__)

CONVERSATION_CHARS = 1500


def retry_feedback(state: OrchestratorState, step: CodingStep, language: str) -> str:
    """What went wrong last time, for the next attempt of the same step (empty on a first attempt)."""
    raw = Setbacks.of(state).recovery
    attempt = Attempts.of(state).attempt
    if not raw or attempt <= 1:
        return ""
    recovery = Recovery.model_validate(raw)
    if (recovery.goal_index, recovery.step_index) != (Position.of(state).current_goal_index, step.index):
        return ""
    return prompts.retry_section(recovery, texts(language).retry_section.format(attempt=recovery.attempt))


def keeps_changes(state: OrchestratorState, step: CodingStep) -> bool:
    """Whether this attempt works on top of the failed one's change (see `Recovery.keep_changes`)."""
    raw = Setbacks.of(state).recovery
    if not raw or Attempts.of(state).attempt <= 1:
        return False
    recovery = Recovery.model_validate(raw)
    return recovery.keep_changes and (recovery.goal_index, recovery.step_index) == (
        Position.of(state).current_goal_index, step.index)


def conversation_before(state: OrchestratorState, query: str) -> str:
    """The conversation before this request, newest kept when it is long (the request itself,
    which Kotlin also lists as the last message, is not repeated)."""
    text = chat.full_conversation(state, exclude_last=query)
    return text if len(text) <= CONVERSATION_CHARS else "…" + text[-(CONVERSATION_CHARS - 1):]


@dataclass(frozen=True)
class StepFiles:
    """What the agent gets of the workspace for one code step."""

    editable: list[str]
    """The files it may change: the step's files the words name (and those still to be created)."""
    context: list[str]
    """The step's other files, read-only: a planner that listed `__init__.py` and `__version__.py`
    beside the `__main__.py` the request names made the agent rewrite all three."""
    tests: list[str]
    """The test files covering the step's files, or named: the first attempt knows what judges it."""


def step_files(workspace: Path, step: CodingStep, query: str) -> StepFiles:
    """Split the step's files into the ones to change and the ones to read, and find its tests."""
    files = list_files(workspace)
    named = resolve(named_paths(f"{step.instructions}\n{query}"), files)
    existing = set(files)
    wanted = [path for path in step.files if path in named or path not in existing]
    editable = wanted if wanted and len(wanted) < len(step.files) else list(step.files)
    targets = step.files or [path for path in named if not is_test_file(path)]
    tests = covering_tests(workspace, files, targets, named=[path for path in named if is_test_file(path)])
    return StepFiles(editable=editable, context=[p for p in step.files if p not in editable], tests=tests)


async def _code(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> tuple[StepResult, list[str]]:
    """The step's result and its report warnings (another program ran it; its agent could not be stopped)."""
    ctx = runtime.context
    task = task_of(state)
    goal_index = Position.of(state).current_goal_index
    attempt = Attempts.of(state).attempt
    language = run_language(state, ctx.settings)
    workspace = ctx.workspaces.resolve(task["workspace_path"])
    kb = await prefetch_kb_context(ctx.kb, query=step.instructions[:500], client_id=task["client_id"],
                                   project_id=task.get("project_id"), files=step.files)
    for warning in kb.warnings:
        emit({"type": "warning", "message": warning})
    agent = step.agent_type or "claude"
    rules = rules_of(state)
    goal = current_goal(state)
    scope = await asyncio.to_thread(step_files, workspace, step, task["query"])
    earlier = earlier_steps(state, goal_index, step.index)
    tests = scope.tests
    command = command_for(state, workspace) if rules.get("require_tests") else None
    brief = StepBrief(
        agent_type=agent,
        instructions=prompts.render_instructions(
            step, goal, task, rules, single_goal=len(Position.of(state).goals or []) <= 1,
            earlier=earlier.work, findings=earlier.findings,
            feedback=retry_feedback(state, step, language),
            conversation=conversation_before(state, task["query"]),
            tests=tests, test_command=command.label() if command else None,
            tests_readable=ctx.settings.agent_reads_tests, conditions=UserTerms.of(state).user_conditions or []),
        task=task_brief(state, goal_index, step.index) | {"attempt": attempt},
        kb_context=kb.text,
        environment=Inputs.of(state).environment,
        files=scope.editable,
        read_files=[*scope.context, *(tests if ctx.settings.agent_reads_tests else [])],
        forbidden_files=rules.get("forbidden_files", []),
        title=goal["title"],
        kb_env=kb_env(ctx.settings, task),
    )
    job = AgentJob(
        thread_id=current_thread_id(), task_id=task["id"], client_id=task["client_id"],
        project_id=task.get("project_id"), goal_index=goal_index, step_index=step.index, agent_type=agent,
        workspace=workspace, timeout_seconds=ctx.settings.agent_timeouts.get(agent, 1800),
        expect_changes=step.expects_changes, attempt=attempt, revision=step.revision,
        cloud_providers=agent_cloud(state),
    )
    key = step_changes.snapshot_key(job.thread_id, goal_index, step.index, step.revision)
    base: str | None = None

    reset = not keeps_changes(state, step)

    async def prepare() -> None:
        nonlocal base
        base = await step_changes.begin_step(ctx.snapshots, workspace, key, reset=reset)
        await ctx.workspaces.check_links(workspace)
        ctx.workspaces.prepare(workspace, brief)

    program = ctx.runner.program(agent)
    emit({"type": "agent_start", "agent": agent, "program": program, "goal_index": goal_index,
          "step_index": step.index, "attempt": attempt})
    left: str | None = None  # what the cleanup could not remove
    try:  # each output line is named after the program that printed it, not the type planned
        result = await ctx.runner.run(job, prepare=prepare,
                                      on_log=lambda line: emit({"type": "agent_log", "agent": program, "line": line}))
    except WorkspaceError:
        raise
    except WorkspaceEscapeError as exc:  # a symlink out of the workspace: the agent never started
        log.warning("agent %s not started on step %d.%d: %s", agent, goal_index + 1, step.index + 1, exc)
        result = AgentResult(success=False, summary=f"Agent {agent} not started: {exc}")
    except Exception as exc:  # the runner's own trouble (API, volume) is a failed attempt the run can recover from
        log.exception("agent %s could not run step %d.%d", agent, goal_index + 1, step.index + 1)
        result = AgentResult(success=False, summary=f"Agent {agent} could not run: {type(exc).__name__}: {exc}")
    finally:
        if not should_detach():  # a suspended run's agent still reads and writes .jervis/
            left = ctx.workspaces.cleanup(workspace)
    result = uncleaned(result, left)
    count_agent_tokens(agent, result)
    ran = result.program or program
    t = texts(language)
    warnings: list[str] = []
    if result.fallback:
        warnings.append(t.agent_fallback.format(step=step.index + 1, agent=agent, program=ran, reason=result.fallback))
    if result.not_stopped is not None:  # the runner stopped the attempt but could not delete its Job
        warnings.append(t.agent_not_stopped.format(job=result.not_stopped.job,
                                                   error=clip(result.not_stopped.error, 200)))
    for warning in warnings:
        emit({"type": "warning", "message": warning})
    if base is None:  # re-attached to an agent an earlier process started: its base is on record
        base = await step_changes.recorded_base(ctx.snapshots, workspace, key)
    findings = "" if step.expects_changes else clip(
        "\n".join(part for part in (result.summary, result.log_tail[-FINDINGS_CHARS:]) if part), FINDINGS_CHARS)
    detail = {"agent": agent, "attempt": attempt, "success": result.success, "exit_code": result.exit_code,
              "changed_files": result.changed_files, "log_tail": result.log_tail}
    # Awaited, not queued: a failed attempt's output is what the reflection reads next.
    await ctx.context_store.save_safely(run_key(state), "agent_result", ContextStore.step_key(goal_index, step.index),
                                        result.summary, detail)
    summary = t.agent_changed_nothing.format(summary=result.summary) if result.unchanged else result.summary
    if result.not_stopped is not None:
        summary = f"{summary.rstrip('.')}. {warnings[-1]}"
    return StepResult(step_index=step.index, goal_index=goal_index, success=result.success, summary=summary,
                      agent_type=agent, program=ran if ran != agent else None, fallback=result.fallback,
                      step_type=StepType.CODE, changed_files=result.changed_files,
                      attempt=attempt, revision=step.revision, findings=findings, title=clip(step.instructions, 120),
                      base_tree=base), warnings


def count_agent_tokens(agent: str, result: AgentResult) -> None:
    """The tokens the agent reported (Aider prints them) count in the run's budget, as `agent:<type>`."""
    budget = current_scope().budget
    if result.tokens and budget is not None:
        budget.record("execute_step", f"agent:{agent}", Usage(prompt_tokens=result.tokens.get("sent", 0),
                                                              completion_tokens=result.tokens.get("received", 0)))


async def _respond(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> tuple[StepResult, str]:
    """An answer step. An LLM failure is a failed attempt (the reflection may retry it), not a crash."""
    ctx = runtime.context
    base: dict[str, Any] = {"step_index": step.index, "goal_index": Position.of(state).current_goal_index,
            "step_type": StepType.RESPOND, "attempt": Attempts.of(state).attempt, "revision": step.revision,
            "title": clip(step.instructions, 120)}
    try:
        earlier = earlier_steps(state, base["goal_index"], step.index).results
        context = answer_context(state) + (f"\n\nEarlier steps of this task:\n{earlier}" if earlier else "")
        answer = (await ctx.llm.complete(prompts.execute_respond(
            instructions=step.instructions, task=task_of(state)["query"], context=context,
            language=run_language(state, ctx.settings),
        ), max_tokens=prompts.Cap.ANSWER)).strip()
    except LlmError as exc:
        return StepResult(success=False, summary=f"LLM failed: {exc}", **base), ""
    return StepResult(success=bool(answer), summary=answer[:500] or "Empty answer", **base), answer


def _done_operations(state: OrchestratorState, step: CodingStep) -> set[int]:
    """Tracker operations an earlier attempt of this step already carried out."""
    goal_index = Position.of(state).current_goal_index
    return {index for r in WorkDone.of(state).step_results if r.get("goal_index", 0) == goal_index
            and r["step_index"] == step.index and r.get("step_type") == StepType.TRACKER
            for index in r.get("completed_operations", [])}


async def _tracker(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> tuple[StepResult, list[str]]:
    """Tracker calls, each carried out at most once (app/graph/rules/tracker_ops.py); a retry repeats only
    the operations that failed. Returns the result and the report warnings of operations the
    tracker answered without doing (a placeholder): said, not claimed, and not a failure."""
    ctx = runtime.context
    task = task_of(state)
    t = texts(run_language(state, ctx.settings))
    goal_index = Position.of(state).current_goal_index
    project = Inputs.of(state).jervis_project_id or task.get("project_id")
    completed = _done_operations(state, step)
    done: list[str] = []
    not_done: list[str] = []
    failures: list[str] = []
    for index, op in enumerate(step.tracker_operations):
        if index in completed:
            continue
        if op.op != "create" and not op.issue_key:
            failures.append(f"{op.op}: missing issue_key")
            continue
        call = TrackerCall(run_id=run_key(state), client_id=task["client_id"], project_id=project,
                           goal_index=goal_index, step_index=step.index, revision=step.revision, index=index)
        try:
            result = await carry_out(ctx.kotlin, ctx.context_store, call, op, step.instructions[:80])
        except TrackerError as exc:
            failures.append(str(exc))
            continue
        completed.add(index)
        if result.outcome == "created":
            done.append(f"created {result.issue_key}")
        elif result.outcome == "updated":
            done.append(f"{op.op} {result.issue_key}")
        elif result.outcome == "not_created":
            not_done.append(t.tracker_not_created.format(title=op.title or step.instructions[:80], reason=result.note))
        else:
            not_done.append(t.tracker_not_updated.format(key=result.issue_key, reason=result.note))
    if not step.tracker_operations:
        failures.append("no tracker operations planned")
    summary = "; ".join(done + not_done + [f"FAILED {f}" for f in failures])
    return StepResult(step_index=step.index, goal_index=goal_index, success=not failures,
                      summary=summary, step_type=StepType.TRACKER, attempt=Attempts.of(state).attempt,
                      revision=step.revision,
                      title=clip(step.instructions, 120), completed_operations=sorted(completed)), not_done


async def execute_step(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    step = CodingStep.model_validate(current_step(state))
    updates: dict[str, Any] = {}
    if step.step_type == StepType.RESPOND:
        result, answer = await _respond(state, runtime, step)
        if answer:
            previous = Outcome.of(state).final_result
            updates["final_result"] = f"{previous}\n\n{answer}" if previous else answer
    elif step.step_type == StepType.TRACKER:
        result, not_carried_out = await _tracker(state, runtime, step)
        if not_carried_out:
            updates["warnings"] = not_carried_out
    else:
        result, warnings = await _code(state, runtime, step)
        if warnings:  # the report says which program ran in place of the planned one, and an agent left running
            updates["warnings"] = warnings
    runtime.context.context_store.save_nowait(
        run_key(state), "step", ContextStore.step_key(result.goal_index, result.step_index), result.summary,
        result.model_dump(mode="json"),
    )
    return updates | {"step_results": [result.model_dump(mode="json")]}
