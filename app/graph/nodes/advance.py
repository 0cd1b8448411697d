"""advance_step and advance_goal (spec §7.10): the next step starts at its first attempt."""

from __future__ import annotations

from typing import Any

from app.graph.rules import step_changes
from app.graph.rules.goals import finished_ids
from app.graph.rules.report import done_slots
from app.graph.run_state import NodeRuntime, current_goal, reset_step_counters, run_key, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Position
from app.persistence.context_store import ContextStore
from app.schemas.domain import GoalSummary


async def advance_step(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    return {"current_step_index": Position.of(state).current_step_index + 1, "recovery": None, **reset_step_counters()}


async def goal_summary(state: OrchestratorState, runtime: NodeRuntime) -> GoalSummary:
    """What the current goal's finished steps did (failed attempts and skipped steps do not count
    as its work), with the workspace's content now: the goal's own commit (git_operations)."""
    index = Position.of(state).current_goal_index
    goal = current_goal(state)
    results = sorted((r for r in done_slots(state) if r.get("goal_index", 0) == index), key=lambda r: r["step_index"])
    files = sorted({f for r in results for f in r.get("changed_files", [])})
    workspace = runtime.context.workspaces.resolve(task_of(state)["workspace_path"])
    tree = await step_changes.content_now(runtime.context.snapshots, workspace) if files else None
    return GoalSummary(goal_id=goal["id"], title=goal["title"], summary=" ".join(r["summary"] for r in results)[:1000],
                       changed_files=files, tree=tree)


async def advance_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    """Close the goal with its summary; select_goal picks the next one, if any."""
    summary = await goal_summary(state, runtime)
    runtime.context.context_store.save_nowait(
        run_key(state), "goal", ContextStore.goal_key(Position.of(state).current_goal_index), summary.summary,
        summary.model_dump(mode="json"))
    summarised = {"goal_summaries": [summary.model_dump(mode="json")], "recovery": None}
    done = finished_ids(state) | {summary.goal_id}
    if all(g["id"] in done for g in Position.of(state).goals or []):  # the last goal stays current: the commit
        return summarised                                         # gate may add a step to it
    return summarised | {"steps": [], "current_step_index": 0, **reset_step_counters()}
