"""advance_step and advance_goal (spec §7.10): the next step starts at its first attempt."""

from __future__ import annotations

from typing import Any

from app.graph.nodes._common import NodeRuntime, current_goal, reset_step_counters, run_key
from app.graph.report import done_slots
from app.graph.state import OrchestratorState
from app.persistence.context_store import ContextStore
from app.schemas.domain import GoalSummary


async def advance_step(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    return {"current_step_index": state.get("current_step_index", 0) + 1, "recovery": None, **reset_step_counters()}


async def advance_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    """Close the goal with a summary of what its finished steps did (failed attempts and skipped
    steps do not count as its work), then move to the next goal, if any."""
    index = state.get("current_goal_index", 0)
    goal = current_goal(state)
    results = sorted((r for r in done_slots(state) if r.get("goal_index", 0) == index), key=lambda r: r["step_index"])
    files = sorted({f for r in results for f in r.get("changed_files", [])})
    summary = GoalSummary(goal_id=goal["id"], title=goal["title"],
                          summary=" ".join(r["summary"] for r in results)[:1000], changed_files=files)
    runtime.context.context_store.save_nowait(
        run_key(state), "goal", ContextStore.goal_key(index), summary.summary, summary.model_dump(mode="json"))
    summarised = {"goal_summaries": [summary.model_dump(mode="json")], "recovery": None}
    if index + 1 >= len(state.get("goals") or []):  # the last goal stays current: the commit gate may add a step
        return summarised
    return summarised | {"current_goal_index": index + 1, "steps": [], "current_step_index": 0,
                         **reset_step_counters()}
