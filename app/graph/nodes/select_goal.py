"""select_goal (spec §7.6): the next goal whose dependencies are done, or a wave of them at once.

Goals run in the approved wave order. Where the next wave has two or more ready goals, the run is
an epic or a design, the workspace is the top of a git repository and `EPIC_MAX_PARALLEL_GOALS`
allows it, up to that many start together, each in its own worktree (`run_goal`, fanned out by
`routing.route_after_select_goal`), from the workspace's content now. A goal that failed or
conflicted in a wave runs again on its own, with what happened as part of its description.
"""

from __future__ import annotations

from typing import Any

from app.agents.snapshots import SnapshotError
from app.graph.rules.goals import finished_ids
from app.graph.rules.waves import PARALLEL_CATEGORIES, RUN_ALONE, latest_wave_records, parallel_limit, ready_goals
from app.graph.run_state import NodeRuntime, current_thread_id, reset_step_counters, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Intake, Position, Waves
from app.texts import texts


async def select_goal(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    goals = list(state["goals"])
    done = finished_ids(state)
    ready = ready_goals(goals, done)
    if not ready:  # waiting on goals that cannot finish (a plan that skipped its gate): plan order
        ready = [i for i, g in enumerate(goals) if g["id"] not in done][:1] or [Position.of(state).current_goal_index]
    records = latest_wave_records(Waves.of(state).wave_goals or [])
    alone = [i for i in ready if goals[i]["id"] in records and records[goals[i]["id"]]["status"] in RUN_ALONE]
    together = [i for i in ready if i not in alone][:parallel_limit(ctx.settings)]
    fresh = {"steps": [], "current_step_index": 0, "recovery": None, "evaluation": None, **reset_step_counters()}
    if not alone and len(together) > 1 and Intake.of(state).task_category in PARALLEL_CATEGORIES:
        wave = await _start_wave(state, runtime, [goals[i]["id"] for i in together])
        if wave is not None:
            return fresh | {"wave": wave, "current_goal_index": together[0]}
    index = (alone or ready)[0]
    record = records.get(goals[index]["id"])
    if record is not None and record["status"] in RUN_ALONE:
        t = texts(run_language(state, ctx.settings))
        note = (t.wave_goal_conflict if record["status"] == "conflict" else t.wave_goal_failed).format(
            reason=record["reason"])
        goals[index] = {**goals[index], "description": f"{goals[index].get('description', '')}\n\n{note}".strip()}
        return fresh | {"goals": goals, "current_goal_index": index, "wave": None,
                        "wave_goals": [{**record, "status": "alone"}]}
    return fresh | {"current_goal_index": index, "wave": None}


async def _start_wave(state: OrchestratorState, runtime: NodeRuntime, goal_ids: list[str]) -> dict[str, Any] | None:
    """The wave's record with its starting content, or None where goals cannot run side by side
    (no git repository at the workspace's top, or git failing: they then run one by one)."""
    ctx = runtime.context
    main = ctx.workspaces.resolve(task_of(state)["workspace_path"])
    if not await ctx.snapshots.is_repository(main):
        return None
    try:
        ctx.workspaces.exclude_agent_files(main)  # the worktrees share its exclude rules
        tree = await ctx.snapshots.current_tree(main)
        commit = await ctx.worktrees.base_commit(main, tree, message=f"jervis: wave base of {current_thread_id()}")
    except (SnapshotError, OSError):
        return None
    number = 1 + max((r["wave"] for r in Waves.of(state).wave_goals or []), default=0)
    return {"number": number, "goals": goal_ids, "base_tree": tree, "base_commit": commit}
