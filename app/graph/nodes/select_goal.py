"""select_goal (spec §7.6): take the next goal whose dependencies are done."""

from __future__ import annotations

from typing import Any

from app.graph.goals import order_for_dependencies
from app.graph.nodes._common import NodeRuntime
from app.graph.state import OrchestratorState


async def select_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    index = state.get("current_goal_index", 0)
    completed = {s["goal_id"] for s in state.get("goal_summaries", [])}
    goals = order_for_dependencies(state["goals"], index, completed)
    return {"goals": goals, "steps": [], "current_step_index": 0}
