"""advance_step and advance_goal (spec §7.10)."""

from __future__ import annotations

from typing import Any

from app.graph.nodes._common import NodeRuntime, current_goal, task_of
from app.graph.state import OrchestratorState
from app.persistence.context_store import ContextStore
from app.schemas.domain import GoalSummary


async def advance_step(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    return {"current_step_index": state.get("current_step_index", 0) + 1}


async def advance_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    index = state.get("current_goal_index", 0)
    goal = current_goal(state)
    results = [r for r in state.get("step_results", []) if r.get("goal_index", 0) == index]
    files = sorted({f for r in results for f in r.get("changed_files", [])})
    summary = GoalSummary(goal_id=goal["id"], title=goal["title"],
                          summary=" ".join(r["summary"] for r in results)[:1000], changed_files=files)
    runtime.context.context_store.save_nowait(
        task_of(state)["id"], "goal", ContextStore.goal_key(index), summary.summary, summary.model_dump(mode="json"))
    return {"current_goal_index": index + 1, "goal_summaries": [summary.model_dump(mode="json")]}
