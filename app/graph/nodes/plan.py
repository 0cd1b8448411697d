"""plan (spec §7.4): single tasks by action — respond, code, tracker_ops or mixed."""

from __future__ import annotations

from typing import Any

from app.graph import chat, prompts
from app.graph.nodes._common import (
    NodeRuntime,
    number_steps,
    planning_context,
    reset_step_counters,
    run_language,
    task_of,
)
from app.graph.state import OrchestratorState
from app.graph.step_cleanup import cleaned_steps
from app.schemas.domain import CodingStep, GoalPlan, StepPlan, StepType


async def plan(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    action = state.get("task_action") or "respond"
    language = run_language(state, ctx.settings)
    decisions = "\n".join(chat.key_decisions(state, 10))
    base = {"current_goal_index": 0, "current_step_index": 0, **reset_step_counters()}
    if action == "respond":
        step = CodingStep(index=0, instructions=task["query"], step_type=StepType.RESPOND)
        goal = {"id": "g1", "title": task["query"][:80], "complexity": state.get("task_complexity") or "simple"}
        return base | {"goals": [goal], "steps": [step.model_dump(mode="json")]}
    if action == "code":
        goals = await ctx.llm.complete_json(
            prompts.plan_goals(query=task["query"], context=planning_context(state), decisions=decisions,
                               language=language),
            GoalPlan,
        )
        return base | {"goals": [g.model_dump(mode="json") for g in goals.goals], "steps": []}
    planned = await ctx.llm.complete_json(
        prompts.plan_operations(query=task["query"], action=action, context=planning_context(state),
                                decisions=decisions, language=language),
        StepPlan,
    )
    steps = cleaned_steps(planned.steps)
    if action == "tracker_ops":
        for step in steps:
            step.step_type = StepType.TRACKER
    goal = {"id": "g1", "title": task["query"][:80], "complexity": state.get("task_complexity") or "medium"}
    return base | {
        "goals": [goal],
        "steps": number_steps(steps, complexity=goal["complexity"], preference=task.get("agent_preference", "auto"),
                              mapping=ctx.settings.agent_selection),
    }
