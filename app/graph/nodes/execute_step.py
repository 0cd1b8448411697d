"""execute_step (spec §7.8): run one step — an LLM answer, a coding agent, or tracker calls."""

from __future__ import annotations

import logging
from typing import Any

from app.agents.base import AgentJob, AgentResult
from app.agents.confinement import WorkspaceEscapeError
from app.agents.control import should_detach
from app.agents.workspace import StepBrief, WorkspaceError
from app.clients.kotlin import TrackerError
from app.graph import chat, prompts, step_changes
from app.graph.nodes._common import (
    NodeRuntime,
    answer_context,
    clip,
    current_goal,
    current_step,
    current_thread_id,
    emit,
    kb_env,
    run_language,
    task_brief,
    task_of,
)
from app.graph.state import OrchestratorState
from app.graph.state_parts import GoalDict, Rules, TaskDict
from app.graph.tracker_ops import TrackerCall, carry_out
from app.kb.prefetch import prefetch_kb_context
from app.llm.provider import LlmError
from app.persistence.context_store import ContextStore
from app.schemas.domain import CodingStep, Recovery, StepResult, StepType
from app.texts import texts

log = logging.getLogger(__name__)

FINDINGS_CHARS = 1500
CONVERSATION_CHARS = 1500
FEEDBACK_CHARS = 3000


def retry_feedback(state: OrchestratorState, step: CodingStep, language: str) -> str:
    """What went wrong last time, for the next attempt of the same step (empty on a first attempt)."""
    raw = state.get("recovery")
    attempt = state.get("attempt", 1)
    if not raw or attempt <= 1:
        return ""
    recovery = Recovery.model_validate(raw)
    if (recovery.goal_index, recovery.step_index) != (state.get("current_goal_index", 0), step.index):
        return ""
    lines = [f"## {texts(language).retry_section.format(attempt=recovery.attempt)}",
             clip(recovery.failure, FEEDBACK_CHARS)]
    if recovery.root_cause:
        lines.append(f"Root cause: {recovery.root_cause}")
    if recovery.hint:
        lines.append(f"Do differently: {recovery.hint}")
    lines.append("The workspace was reset to its state before this step.")
    return "\n".join(lines)


def earlier_findings(state: OrchestratorState, goal_index: int, step_index: int) -> str:
    """What inspect / analyse steps of this goal found, for the steps after them."""
    found = {}
    for result in state.get("step_results", []):
        if (result.get("goal_index", 0) == goal_index and result["step_index"] < step_index
                and result.get("success") and result.get("findings")):
            found[result["step_index"]] = f"- step {result['step_index'] + 1}: {result['findings']}"
    return clip("\n".join(found[i] for i in sorted(found)), FINDINGS_CHARS)


def render_instructions(step: CodingStep, goal: GoalDict, task: TaskDict, rules: Rules,
                        earlier: str, *, findings: str = "", feedback: str = "", conversation: str = "",
                        conditions: list[str] | None = None) -> str:
    files = "\n".join(f"- {f}" for f in step.files) or "- (decide yourself)"
    forbidden = ", ".join(rules.get("forbidden_files", [])) or "-"
    report = ("- This step inspects or runs something: change no file; put what you found in the summary.\n"
              if not step.expects_changes else "")
    sections = [
        f"# Goal: {goal['title']}\n\n{goal.get('description', '')}",
        f"## Step {step.index + 1}\n\n{step.instructions}",
        feedback,
        f"## Files\n{files}",
        f"## Rules\n- Do not run git commands; the orchestrator commits after the user approves.\n"
        f"- Never touch files matching: {forbidden}\n{report}"
        + "".join(f"- The user's condition: {c}\n" for c in conditions or []),
        f"## Whole task\n{task['query']}",
        f"## Findings of earlier steps\n{findings}" if findings else "",
        f"## Earlier work\n{earlier}" if earlier else "",
        f"## Conversation\n{conversation}" if conversation else "",
    ]
    return "\n\n".join(part for part in sections if part) + "\n"


async def _code(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> StepResult:
    ctx = runtime.context
    task = task_of(state)
    goal_index = state.get("current_goal_index", 0)
    attempt = state.get("attempt", 1)
    language = run_language(state, ctx.settings)
    workspace = ctx.workspaces.resolve(task["workspace_path"])
    kb = await prefetch_kb_context(ctx.kb, query=step.instructions[:500], client_id=task["client_id"],
                                   project_id=task.get("project_id"), files=step.files)
    for warning in kb.warnings:
        emit({"type": "warning", "message": warning})
    earlier = await ctx.context_store.assemble_step_context(task["id"], goal_index, step.index)
    agent = step.agent_type or "claude"
    rules = state.get("rules", {})
    goal = current_goal(state)
    brief = StepBrief(
        agent_type=agent,
        instructions=render_instructions(
            step, goal, task, rules, earlier, findings=earlier_findings(state, goal_index, step.index),
            feedback=retry_feedback(state, step, language),
            conversation=clip(chat.full_conversation(state), CONVERSATION_CHARS),
            conditions=state.get("user_conditions") or []),
        task=task_brief(state, goal_index, step.index) | {"attempt": attempt},
        kb_context=kb.text,
        environment=state.get("environment"),
        files=step.files,
        forbidden_files=rules.get("forbidden_files", []),
        title=goal["title"],
        kb_env=kb_env(ctx.settings, task),
    )
    job = AgentJob(
        thread_id=current_thread_id(), task_id=task["id"], client_id=task["client_id"],
        project_id=task.get("project_id"), goal_index=goal_index, step_index=step.index, agent_type=agent,
        workspace=workspace, timeout_seconds=ctx.settings.agent_timeouts.get(agent, 1800),
        expect_changes=step.expects_changes, attempt=attempt, revision=step.revision,
    )
    key = step_changes.snapshot_key(job.thread_id, goal_index, step.index, step.revision)
    base: str | None = None

    async def prepare() -> None:
        nonlocal base
        base = await step_changes.begin_step(ctx.snapshots, workspace, key)
        await ctx.workspaces.check_links(workspace)
        ctx.workspaces.prepare(workspace, brief)

    emit({"type": "agent_start", "agent": agent, "goal_index": goal_index, "step_index": step.index,
          "attempt": attempt})
    try:
        result = await ctx.runner.run(job, prepare=prepare,
                                      on_log=lambda line: emit({"type": "agent_log", "agent": agent, "line": line}))
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
            ctx.workspaces.cleanup(workspace)
    if base is None:  # re-attached to an agent an earlier process started: its base is on record
        base = await step_changes.recorded_base(ctx.snapshots, workspace, key)
    findings = "" if step.expects_changes else clip(
        "\n".join(part for part in (result.summary, result.log_tail[-FINDINGS_CHARS:]) if part), FINDINGS_CHARS)
    detail = {"agent": agent, "attempt": attempt, "success": result.success, "exit_code": result.exit_code,
              "changed_files": result.changed_files, "log_tail": result.log_tail}
    # Awaited, not queued: a failed attempt's output is what the reflection reads next.
    await ctx.context_store.save_safely(task["id"], "agent_result", ContextStore.step_key(goal_index, step.index),
                                        result.summary, detail)
    return StepResult(step_index=step.index, goal_index=goal_index, success=result.success, summary=result.summary,
                      agent_type=agent, step_type=StepType.CODE, changed_files=result.changed_files,
                      attempt=attempt, revision=step.revision, findings=findings, title=clip(step.instructions, 120),
                      base_tree=base)


async def _respond(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> tuple[StepResult, str]:
    """An answer step. An LLM failure is a failed attempt (the reflection may retry it), not a crash."""
    ctx = runtime.context
    base: dict[str, Any] = {"step_index": step.index, "goal_index": state.get("current_goal_index", 0),
            "step_type": StepType.RESPOND, "attempt": state.get("attempt", 1), "revision": step.revision,
            "title": clip(step.instructions, 120)}
    try:
        answer = (await ctx.llm.complete(prompts.execute_respond(
            instructions=step.instructions, task=task_of(state)["query"], context=answer_context(state),
            language=run_language(state, ctx.settings),
        ))).strip()
    except LlmError as exc:
        return StepResult(success=False, summary=f"LLM failed: {exc}", **base), ""
    return StepResult(success=bool(answer), summary=answer[:500] or "Empty answer", **base), answer


def _done_operations(state: OrchestratorState, step: CodingStep) -> set[int]:
    """Tracker operations an earlier attempt of this step already carried out."""
    goal_index = state.get("current_goal_index", 0)
    return {index for r in state.get("step_results", []) if r.get("goal_index", 0) == goal_index
            and r["step_index"] == step.index and r.get("step_type") == StepType.TRACKER
            for index in r.get("completed_operations", [])}


async def _tracker(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> tuple[StepResult, list[str]]:
    """Tracker calls, each carried out at most once (app/graph/tracker_ops.py); a retry repeats only
    the operations that failed. Returns the result and the report warnings of operations the
    tracker answered without doing (a placeholder): said, not claimed, and not a failure."""
    ctx = runtime.context
    task = task_of(state)
    t = texts(run_language(state, ctx.settings))
    goal_index = state.get("current_goal_index", 0)
    project = state.get("jervis_project_id") or task.get("project_id")
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
        call = TrackerCall(task_id=task["id"], client_id=task["client_id"], project_id=project,
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
                      summary=summary, step_type=StepType.TRACKER, attempt=state.get("attempt", 1),
                      revision=step.revision,
                      title=clip(step.instructions, 120), completed_operations=sorted(completed)), not_done


async def execute_step(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    step = CodingStep.model_validate(current_step(state))
    updates: dict[str, Any] = {}
    if step.step_type == StepType.RESPOND:
        result, answer = await _respond(state, runtime, step)
        if answer:
            previous = state.get("final_result")
            updates["final_result"] = f"{previous}\n\n{answer}" if previous else answer
    elif step.step_type == StepType.TRACKER:
        result, not_carried_out = await _tracker(state, runtime, step)
        if not_carried_out:
            updates["warnings"] = not_carried_out
    else:
        result = await _code(state, runtime, step)
    runtime.context.context_store.save_nowait(
        task_of(state)["id"], "step", ContextStore.step_key(result.goal_index, result.step_index), result.summary,
        result.model_dump(mode="json"),
    )
    return updates | {"step_results": [result.model_dump(mode="json")]}
