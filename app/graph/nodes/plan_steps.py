"""plan_steps (spec §7.7): concrete steps for the current goal, each code step with its agent."""

from __future__ import annotations

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
from app.schemas.domain import StepPlan


def done_before(state: OrchestratorState) -> str:
    return "\n".join(
        f"- {s['title']}: {s['summary']} (files: {', '.join(s.get('changed_files', [])) or '-'})"
        for s in state.get("goal_summaries", [])
    )


async def plan_steps(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    goal = current_goal(state)
    task = task_of(state)
    planned = await ctx.llm.complete_json(
        prompts.plan_steps(
            goal=f"{goal['title']}\n{goal.get('description', '')}",
            task=task["query"],
            done_before=done_before(state),
            context=planning_context(state),
            language=run_language(state, ctx.settings),
        ),
        StepPlan,
    )
    steps = number_steps(cleaned_steps(planned.steps), complexity=goal.get("complexity"),
                         preference=task.get("agent_preference", "auto"), mapping=ctx.settings.agent_selection,
                         revision=state.get("replans", 0))
    return {"steps": steps, "current_step_index": 0, **reset_step_counters()}
