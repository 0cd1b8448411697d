"""run_goal: one goal of a wave, worked on in its own git worktree beside the wave's other goals.

`routing.route_after_select_goal` sends each goal of the wave here at once (LangGraph `Send`);
each runs the goal loop (`builder.build_goal_graph`: plan_steps, execute_step, evaluate, reflect,
advance_step, advance_goal) as a subgraph on its worktree. The subgraph inherits the run's
checkpointer, so every goal's progress is checkpointed on its own: after a kill -9 mid-wave the
run resumes each unfinished goal from its last step (its agent's Job re-attached by name) and a
goal that had finished is not run again (its writes are kept with the wave's checkpoint).

A goal of a wave never asks the user: a failure its reflection would take to the user or to a
replan ends the goal as failed, and it runs again on its own after the wave, where every
recovery is open (`select_goal`). Only its own records leave the goal (results, failures,
skips, warnings, its wave record); `merge_wave` turns its summary into a finished goal.
"""

from __future__ import annotations

from typing import Any

from langgraph.pregel import Pregel

from app.agents.snapshots import SnapshotError
from app.graph.guards import Node
from app.graph.rules.waves import goal_branch, worktree_path
from app.graph.run_state import NodeRuntime, current_thread_id, reset_step_counters, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Position, Waves

#: Halts that end the whole run (the budget is the run's, a model outage hits every goal).
RUN_HALTS = frozenset({"budget", "llm", "user_stop"})


def goal_runner(goal_graph: Pregel[Any, Any, Any, Any]) -> Node:
    """The `run_goal` node over the compiled goal loop."""

    async def run_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
        ctx = runtime.context
        wave = Waves.of(state).wave
        if not wave:
            raise ValueError("run_goal without a wave")
        index = Position.of(state).current_goal_index
        goal = state["goals"][index]
        task = task_of(state)
        thread = current_thread_id() or task["id"]
        relative = worktree_path(task["workspace_path"], thread, index)
        record: dict[str, Any] = {"wave": wave["number"], "goal_id": goal["id"], "tree": None, "summary": None}
        try:
            main = ctx.workspaces.existing(task["workspace_path"])  # gone: the run ends (WorkspaceError)
            path = ctx.workspaces.resolve(relative)
            await ctx.worktrees.create(main, path, goal_branch(thread, index), wave["base_commit"])
        except (SnapshotError, OSError) as exc:
            return {"wave_goals": [record | {"status": "failed", "reason": f"no worktree: {exc}"}]}
        end = await goal_graph.ainvoke({
            **state, "task": {**task, "workspace_path": relative}, "wave": None, "halt": None, "recovery": None,
            "evaluation": None, "steps": [], "current_step_index": 0, **reset_step_counters()})
        summary = next((s for s in end.get("goal_summaries") or [] if s["goal_id"] == goal["id"]), None)
        halt = end.get("halt")
        if summary is not None and not halt:  # its tree: the worktree as advance_goal left it (None: nothing changed)
            record |= {"status": "done", "tree": summary.get("tree"), "summary": summary, "reason": ""}
        elif halt and halt["kind"] in RUN_HALTS:
            record |= {"status": "halted", "reason": halt["message"], "halt": halt}
        else:
            why = (halt or {}).get("message") or (end.get("recovery") or {}).get("failure") or \
                (end.get("evaluation") or {}).get("feedback") or ""
            record |= {"status": "failed", "reason": str(why)[:500]}
        return {
            "step_results": [r for r in end.get("step_results") or [] if r.get("goal_index") == index],
            "failures": end.get("failures") or [], "skipped": end.get("skipped") or [],
            "warnings": end.get("warnings") or [], "wave_goals": [record],
        }

    return run_goal
