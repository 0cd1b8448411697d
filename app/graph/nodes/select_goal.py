"""select_goal (spec §7.6): take the next goal whose dependencies are done."""

from __future__ import annotations

from typing import Any

from app.graph.nodes._common import NodeRuntime
from app.graph.state import OrchestratorState


def order_for_dependencies(goals: list[dict[str, Any]], index: int, completed: set[str]) -> list[dict[str, Any]]:
    """If goal `index` waits on unfinished goals, swap in the first later goal that does not;
    if none can run, keep the order (best effort, as the spec says)."""
    def ready(goal: dict[str, Any]) -> bool:
        return all(dep in completed for dep in goal.get("dependencies", []))

    if index >= len(goals) or ready(goals[index]):
        return goals
    for later in range(index + 1, len(goals)):
        if ready(goals[later]):
            reordered = list(goals)
            reordered[index], reordered[later] = reordered[later], reordered[index]
            return reordered
    return goals


async def select_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    index = state.get("current_goal_index", 0)
    completed = {s["goal_id"] for s in state.get("goal_summaries", [])}
    goals = order_for_dependencies(state["goals"], index, completed)
    return {"goals": goals, "steps": [], "current_step_index": 0}
