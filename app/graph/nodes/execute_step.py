"""execute_step (spec §7.8): run one step — an LLM answer, a coding agent, or tracker calls."""

from __future__ import annotations

from typing import Any

from app.agents.base import AgentJob
from app.agents.workspace import StepBrief
from app.clients.kotlin import TrackerError
from app.config import Settings
from app.graph import prompts
from app.graph.nodes._common import (
    NodeRuntime,
    current_goal,
    current_step,
    emit,
    task_of,
)
from app.graph.nodes.respond import answer_context
from app.graph.state import OrchestratorState
from app.kb.prefetch import prefetch_kb_context
from app.persistence.context_store import ContextStore
from app.schemas.domain import CodingStep, StepResult, StepType
from app.schemas.kotlin import TrackerCreateIssue, TrackerUpdateIssue


def task_brief(state: OrchestratorState, goal_index: int, step_index: int) -> dict[str, Any]:
    """`.jervis/task.json`: who and what, for the agent and for humans reading the volume."""
    task = task_of(state)
    return {"id": task["id"], "client_id": task["client_id"], "project_id": task.get("project_id"),
            "thread_id": state.get("thread_id"), "goal_index": goal_index, "step_index": step_index,
            "client_name": state.get("client_name"), "project_name": state.get("project_name"),
            "query": task["query"]}


def kb_env(settings: Settings, task: dict[str, Any]) -> dict[str, str]:
    """Environment of the KB MCP server the agent may start (tenant and URLs)."""
    return {"CLIENT_ID": task["client_id"], "PROJECT_ID": task.get("project_id") or "",
            "KB_URL": settings.knowledgebase_url, "KB_WRITE_URL": settings.kb_write_url}


def render_instructions(step: CodingStep, goal: dict[str, Any], task: dict[str, Any], rules: dict[str, Any],
                        earlier: str) -> str:
    files = "\n".join(f"- {f}" for f in step.files) or "- (decide yourself)"
    forbidden = ", ".join(rules.get("forbidden_files", [])) or "-"
    return (
        f"# Goal: {goal['title']}\n\n{goal.get('description', '')}\n\n"
        f"## Step {step.index + 1}\n\n{step.instructions}\n\n"
        f"## Files\n{files}\n\n"
        f"## Rules\n- Do not run git commands; the orchestrator commits after the user approves.\n"
        f"- Never touch files matching: {forbidden}\n"
        f"- When done, write `.jervis/result.json`: {{\"success\": bool, \"summary\": str, \"changedFiles\": [str]}}\n\n"
        f"## Whole task\n{task['query']}\n\n"
        + (f"## Earlier work\n{earlier}\n" if earlier else "")
    )


async def _code(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> StepResult:
    ctx = runtime.context
    task = task_of(state)
    goal_index = state.get("current_goal_index", 0)
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
        instructions=render_instructions(step, goal, task, rules, earlier),
        task=task_brief(state, goal_index, step.index),
        kb_context=kb.text,
        environment=state.get("environment"),
        files=step.files,
        forbidden_files=rules.get("forbidden_files", []),
        title=goal["title"],
        kb_env=kb_env(ctx.settings, task),
    )
    job = AgentJob(
        thread_id=state.get("thread_id", ""), task_id=task["id"], client_id=task["client_id"],
        project_id=task.get("project_id"), goal_index=goal_index, step_index=step.index, agent_type=agent,
        workspace=workspace, timeout_seconds=ctx.settings.agent_timeouts.get(agent, 1800),
        expect_changes=step.expects_changes,
    )
    emit({"type": "agent_start", "agent": agent, "goal_index": goal_index, "step_index": step.index})
    try:
        result = await ctx.runner.run(job, prepare=lambda: ctx.workspaces.prepare(workspace, brief),
                                      on_log=lambda line: emit({"type": "agent_log", "agent": agent, "line": line}))
    finally:
        ctx.workspaces.cleanup(workspace)
    ctx.context_store.save_nowait(
        task["id"], "agent_result", ContextStore.step_key(goal_index, step.index), result.summary,
        {"agent": agent, "success": result.success, "exit_code": result.exit_code,
         "changed_files": result.changed_files, "log_tail": result.log_tail},
    )
    return StepResult(step_index=step.index, goal_index=goal_index, success=result.success, summary=result.summary,
                      agent_type=agent, step_type=StepType.CODE, changed_files=result.changed_files)


async def _respond(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> tuple[StepResult, str]:
    ctx = runtime.context
    answer = (await ctx.llm.complete(prompts.execute_respond(
        instructions=step.instructions, task=task_of(state)["query"], context=answer_context(state),
        language=ctx.settings.response_language,
    ))).strip()
    result = StepResult(step_index=step.index, goal_index=state.get("current_goal_index", 0), success=bool(answer),
                        summary=answer[:500] or "Empty answer", step_type=StepType.RESPOND)
    return result, answer


async def _tracker(state: OrchestratorState, runtime: NodeRuntime, step: CodingStep) -> StepResult:
    ctx = runtime.context
    task = task_of(state)
    project = state.get("jervis_project_id") or task.get("project_id")
    done: list[str] = []
    failures: list[str] = []
    for op in step.tracker_operations:
        try:
            if op.op == "create":
                reply = await ctx.kotlin.create_issue(TrackerCreateIssue(
                    client_id=task["client_id"], project_id=project, title=op.title or step.instructions[:80],
                    description=op.description, type=op.type))
                done.append(f"created {reply.get('key') or op.title}")
            else:
                if not op.issue_key:
                    failures.append(f"{op.op}: missing issue_key")
                    continue
                await ctx.kotlin.update_issue(TrackerUpdateIssue(
                    client_id=task["client_id"], project_id=project, issue_key=op.issue_key, status=op.status,
                    comment=op.comment))
                done.append(f"{op.op} {op.issue_key}")
        except TrackerError as exc:
            failures.append(str(exc))
    if not step.tracker_operations:
        failures.append("no tracker operations planned")
    summary = "; ".join(done + [f"FAILED {f}" for f in failures])
    return StepResult(step_index=step.index, goal_index=state.get("current_goal_index", 0), success=not failures,
                      summary=summary, step_type=StepType.TRACKER)


async def execute_step(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    step = CodingStep.model_validate(current_step(state))
    updates: dict[str, Any] = {}
    if step.step_type == StepType.RESPOND:
        result, answer = await _respond(state, runtime, step)
        previous = state.get("final_result")
        updates["final_result"] = f"{previous}\n\n{answer}" if previous else answer
    elif step.step_type == StepType.TRACKER:
        result = await _tracker(state, runtime, step)
    else:
        result = await _code(state, runtime, step)
    runtime.context.context_store.save_nowait(
        task_of(state)["id"], "step", ContextStore.step_key(result.goal_index, result.step_index), result.summary,
        result.model_dump(mode="json"),
    )
    return updates | {"step_results": [result.model_dump(mode="json")]}
