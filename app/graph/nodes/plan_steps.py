"""plan_steps (spec §7.7): concrete steps for the current goal of an epic, each code step with its
agent. A plan the model cannot deliver falls back to one step that is the goal itself."""

from __future__ import annotations

import logging
from typing import Any

from app.graph import prompts
from app.graph.nodes._common import (
    NodeRuntime,
    current_goal,
    number_steps,
    planning_context,
    reset_step_counters,
    run_language,
    task_of,
)
from app.graph.state import OrchestratorState
from app.graph.step_cleanup import cleaned_steps
from app.llm.provider import LlmJsonError
from app.schemas.domain import CodingStep, StepPlan
from app.texts import texts

log = logging.getLogger(__name__)


def done_before(state: OrchestratorState) -> str:
    return "\n".join(
        f"- {s['title']}: {s['summary']} (files: {', '.join(s.get('changed_files', [])) or '-'})"
        for s in state.get("goal_summaries", [])
    )


async def plan_steps(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    goal = current_goal(state)
    task = task_of(state)
    language = run_language(state, ctx.settings)
    goal_text = f"{goal['title']}\n{goal.get('description', '')}".strip()
    updates: dict[str, Any] = {}
    try:
        planned = await ctx.llm.complete_json(
            prompts.plan_steps(goal=goal_text, task=task["query"], done_before=done_before(state),
                               context=planning_context(state), language=language),
            StepPlan, max_tokens=prompts.Cap.STEPS)
        steps = cleaned_steps(planned.steps)
    except LlmJsonError as exc:
        log.warning("plan_steps: no usable step plan (%s); the goal is one step", exc)
        steps = [CodingStep(instructions=goal_text)]
        updates["warnings"] = [texts(language).warning_plan_fallback.format(error=exc)]
    steps_json = number_steps(steps, complexity=goal.get("complexity"), preference=task.get("agent_preference", "auto"),
                              mapping=ctx.settings.agent_selection, revision=state.get("replans", 0))
    return updates | {"steps": steps_json, "current_step_index": 0, **reset_step_counters()}
