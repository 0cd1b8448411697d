"""plan_epic and design (spec §5.2): goals for large or new work, grouped in dependency waves.

They only plan; `approve_plan` asks the user. Keeping the interrupt in a node of its own means
the user approves exactly the plan that was shown (a resumed node re-runs from its start).
"""

from __future__ import annotations

from typing import Any

from app.graph import chat, prompts
from app.graph.nodes._common import NodeRuntime, planning_context, run_language, task_of
from app.graph.state import OrchestratorState
from app.schemas.domain import GoalPlan


async def _goals(state: OrchestratorState, runtime: NodeRuntime, node: str) -> dict[str, Any]:
    ctx = runtime.context
    task = task_of(state)
    language = run_language(state, ctx.settings)
    if node == "design":
        messages = prompts.design(query=task["query"], context=planning_context(state), language=language)
    else:
        messages = prompts.plan_goals(query=task["query"], context=planning_context(state),
                                      decisions="\n".join(chat.key_decisions(state)), language=language,
                                      node="plan_epic")
    plan = await ctx.llm.complete_json(messages, GoalPlan, max_tokens=prompts.Cap.GOALS)
    goals = [g.model_dump(mode="json") for g in plan.goals]
    return {"goals": goals, "steps": [], "current_goal_index": 0, "current_step_index": 0}


async def plan_epic(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    return await _goals(state, runtime, "plan_epic")


async def design(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    return await _goals(state, runtime, "design")
