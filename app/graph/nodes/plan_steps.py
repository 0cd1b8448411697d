"""plan_steps (spec §7.7): concrete steps for the current goal of an epic, each code step with its
agent. A goal that names one file of the workspace is one step, the goal itself, with no planning
call (as a single task naming one file); the planner of any other goal is told the plan's other
goals, which are not this goal's work (a small model otherwise plans the whole request again in
every goal). A plan the model cannot deliver falls back to one step that is the goal itself."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from app.graph import prompts
from app.graph.agent_handover import number_steps, workspace_root
from app.graph.prompt_context import planning_context
from app.graph.rules.goals import finished_ids
from app.graph.rules.request_scope import scope_of
from app.graph.rules.step_cleanup import cleaned_steps
from app.graph.run_state import NodeRuntime, cloud_allowed, current_goal, reset_step_counters, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Position, WorkDone
from app.llm.errors import HeartbeatTimeoutError, LlmJsonError
from app.schemas.domain import CodingStep, StepPlan
from app.texts import texts

log = logging.getLogger(__name__)


def other_goals(state: OrchestratorState) -> str:
    """The plan's goals other than the current one and not done yet: work this goal leaves alone."""
    current = current_goal(state)["id"]
    done = finished_ids(state)
    return "\n".join(f"- {g['title']}" for g in Position.of(state).goals or [] if g["id"] not in done | {current})


def done_before(state: OrchestratorState) -> str:
    return "\n".join(
        f"- {s['title']}: {s['summary']} (files: {', '.join(s.get('changed_files', [])) or '-'})"
        for s in WorkDone.of(state).goal_summaries
    )


async def plan_steps(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    goal = current_goal(state)
    task = task_of(state)
    language = run_language(state, ctx.settings)
    goal_text = f"{goal['title']}\n{goal.get('description', '')}".strip()
    updates: dict[str, Any] = {}
    scope = await asyncio.to_thread(scope_of, goal_text, workspace_root(runtime, task["workspace_path"]))
    try:
        if scope.one_file:
            log.info("plan_steps: one step on %s (the goal names one file; no planning call)", scope.targets[0])
            steps = [CodingStep(instructions=goal_text, files=scope.targets)]
        else:
            planned = await ctx.llm.complete_json(
                prompts.plan_steps(goal=goal_text, task=task["query"], done_before=done_before(state),
                                   context=planning_context(state), language=language, others=other_goals(state),
                                   files=scope.sources),
                StepPlan, max_tokens=prompts.Cap.STEPS)
            steps = cleaned_steps(planned.steps)
    except (LlmJsonError, HeartbeatTimeoutError) as exc:  # a plan cut off, or a model that went silent
        log.warning("plan_steps: no usable step plan (%s); the goal is one step", exc)
        steps = [CodingStep(instructions=goal_text)]
        updates["warnings"] = [texts(language).warning_plan_fallback.format(error=exc)]
    steps_json = number_steps(steps, complexity=goal.get("complexity"), preference=task.get("agent_preference", "auto"),
                              mapping=ctx.settings.agent_selection,
                              cloud_allowed=cloud_allowed(state), revision=Attempts.of(state).replans)
    return updates | {"steps": steps_json, "current_step_index": 0, **reset_step_counters()}
