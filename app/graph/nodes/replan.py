"""replan: plan what is left again, with the failure (or the user's reason) as context.

A single task replans the rest of the current goal (its done steps stay done). An epic or a
generated design replans its remaining goals (finished goals stay finished) and goes through
its approval gate again; a plan gate refused with a reason ("ne, udělej to bez nové
závislosti") lands here too. RECOVERY_MAX_REPLANS caps both.
"""

from __future__ import annotations

from typing import Any

from app.graph import prompts
from app.graph.agent_handover import number_steps
from app.graph.prompt_context import planning_context
from app.graph.rules import progress
from app.graph.rules.goals import finished_ids
from app.graph.rules.step_cleanup import cleaned_steps
from app.graph.run_state import NodeRuntime, cloud_allowed, current_goal, reset_step_counters, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Attempts, Intake, Position, WorkDone
from app.schemas.domain import GoalPlan, Recovery, StepPlan
from app.texts.clip import clip

GOAL_LEVEL = frozenset({"epic", "generative"})


def replans_goals(state: OrchestratorState) -> bool:
    """Epics and designs replan their remaining goals; single tasks the rest of the goal."""
    return Intake.of(state).task_category in GOAL_LEVEL


def _why(decision: Recovery) -> str:
    parts = [decision.failure]
    if decision.root_cause:
        parts.append(f"Root cause: {decision.root_cause}")
    if decision.hint:
        parts.append(f"Suggestion: {decision.hint}")
    return clip("\n".join(parts), 3000)


async def replan(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    decision = Recovery.model_validate(state["recovery"])
    task = task_of(state)
    language = run_language(state, ctx.settings)
    replans = Attempts.of(state).replans + 1
    common = {"replans": replans, "recovery": None, **reset_step_counters(),
              "progress_floor": progress.monotonic(0.0, state, "replan")}
    if replans_goals(state):
        summarised = finished_ids(state)
        finished = [g for g in Position.of(state).goals if g["id"] in summarised]  # goals of a wave end in any order
        summaries = "\n".join(f"- {s['title']}: {clip(s['summary'], 200)}" for s in WorkDone.of(state).goal_summaries)
        plan = await ctx.llm.complete_json(prompts.replan_goals(
            task=task["query"], finished=summaries or "-", failure=_why(decision),
            context=planning_context(state), language=language), GoalPlan, max_tokens=prompts.Cap.GOALS)
        taken = {g["id"] for g in finished}
        fresh = []
        for new_goal in plan.goals:  # a new goal never takes a finished goal's id
            while new_goal.id in taken:
                new_goal.id = f"{new_goal.id}-r{replans}"
            taken.add(new_goal.id)
            fresh.append(new_goal.model_dump(mode="json"))
        return common | {"goals": finished + fresh, "steps": [], "current_step_index": 0,
                         "current_goal_index": len(finished), "replan_reason": clip(decision.failure, 200)}
    goal = current_goal(state)
    done = Position.of(state).steps[: Position.of(state).current_step_index]
    done_text = "\n".join(f"- {clip(s['instructions'], 200)}" for s in done) or "-"
    planned = await ctx.llm.complete_json(prompts.replan_steps(
        goal=f"{goal['title']}\n{goal.get('description', '')}", task=task["query"], done=done_text,
        failure=_why(decision), context=planning_context(state), language=language), StepPlan,
        max_tokens=prompts.Cap.STEPS)
    steps = number_steps(cleaned_steps(planned.steps), complexity=goal.get("complexity"),
                         preference=task.get("agent_preference", "auto"), mapping=ctx.settings.agent_selection,
                         cloud_allowed=cloud_allowed(state),
                         start=len(done), revision=replans)
    return common | {"steps": done + steps, "current_step_index": len(done)}
