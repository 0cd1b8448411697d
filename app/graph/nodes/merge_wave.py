"""merge_wave: the work of a wave's goals, merged into the workspace in plan order.

Each finished goal's worktree content is merged onto the result of the goals before it
(`GoalWorktrees.merge`, no working tree needed); the workspace is written once with the merged
result and the worktrees go. A goal that conflicts with the goals merged before it is not merged:
it runs again on its own on top of the merged result, the conflict in its description
(`select_goal`), a single re-run that cannot conflict; a goal that failed in its worktree runs
again the same way. With `require_tests`, the project's tests run on the merged result; a failure
adds a goal that makes them pass, which goes through evaluation and reflection like any other.
Re-running this node after a crash merges the same trees again and writes the same result.
"""

from __future__ import annotations

import logging
from typing import Any

from app.agents.snapshots import SnapshotError
from app.graph import verification
from app.graph.rules.test_plan import command_for
from app.graph.rules.waves import goal_branch, latest_wave_records, worktree_path
from app.graph.run_state import NodeRuntime, current_thread_id, emit, run_language, task_of
from app.graph.state import OrchestratorState
from app.graph.state_access import Position, Waves, rules_of
from app.graph.state_parts import GoalDict, WaveDict, WaveGoalDict
from app.schemas.domain import CodingStep, Complexity, StepType
from app.texts import Texts, texts
from app.texts.clip import clip

log = logging.getLogger(__name__)

#: Goal index of the Jobs that test a wave's merged result (no goal of a plan comes near it).
WAVE_TEST_GOAL_INDEX = 1000


async def merge_wave(state: OrchestratorState, runtime: NodeRuntime) -> dict[str, Any]:
    ctx = runtime.context
    wave: WaveDict | None = Waves.of(state).wave
    if not wave:
        raise ValueError("merge_wave without a wave")
    t = texts(run_language(state, ctx.settings))
    task = task_of(state)
    goals = {g["id"]: g for g in Position.of(state).goals or []}
    main = ctx.workspaces.resolve(task["workspace_path"])
    records = latest_wave_records([r for r in Waves.of(state).wave_goals or [] if r["wave"] == wave["number"]])
    merged, tree = wave["base_commit"], wave["base_tree"]
    merged_titles: list[str] = []
    out: list[WaveGoalDict] = []
    summaries: list[dict[str, Any]] = []
    halt: dict[str, Any] | None = None
    for goal_id in wave["goals"]:  # plan order
        record = records.get(goal_id)
        if record is None or record["status"] not in ("done", "merged"):
            if record is not None and record["status"] == "halted" and halt is None:
                halt = record.get("halt") or {"kind": "exhausted", "message": record["reason"]}
            continue
        goal_tree, summary = record.get("tree"), record.get("summary")
        if goal_tree and goal_tree != wave["base_tree"]:
            step = await ctx.worktrees.merge(main, merged, wave["base_commit"], goal_tree,
                                             f"jervis: {clip(goals[goal_id]['title'], 60)}")
            if step.conflicts:
                reason = t.wave_conflict_reason.format(files=", ".join(step.conflicts[:10]),
                                                       goals=", ".join(merged_titles) or "-")
                out.append({**record, "status": "conflict", "reason": reason})
                emit({"type": "wave_conflict", "goal": goal_id, "files": step.conflicts[:10]})
                continue
            merged, tree = step.merged, step.tree
        merged_titles.append(goals[goal_id]["title"])
        out.append({**record, "status": "merged", "tree": tree})
        if summary is not None:
            summaries.append({**summary, "tree": tree})
    if tree != wave["base_tree"]:
        await ctx.snapshots.restore(main, tree)
    await _remove_worktrees(state, runtime, wave)
    updates: dict[str, Any] = {"wave": None, "wave_goals": out, "goal_summaries": summaries}
    if halt is not None:
        return updates | {"halt": halt}
    if rules_of(state).get("require_tests") and tree != wave["base_tree"]:
        failing = await _tests_on_merged(state, runtime, wave, t)
        if failing is not None:
            updates["goals"] = [*state["goals"], failing]
    return updates


async def _remove_worktrees(state: OrchestratorState, runtime: NodeRuntime, wave: WaveDict) -> None:
    ctx = runtime.context
    task = task_of(state)
    thread = current_thread_id() or task["id"]
    main = ctx.workspaces.resolve(task["workspace_path"])
    index = {g["id"]: i for i, g in enumerate(Position.of(state).goals or [])}
    for goal_id in wave["goals"]:
        path = ctx.workspaces.resolve(worktree_path(task["workspace_path"], thread, index[goal_id]))
        try:
            await ctx.worktrees.remove(main, path, goal_branch(thread, index[goal_id]))
        except (SnapshotError, OSError) as exc:  # a leftover worktree costs disk, not correctness
            log.warning("could not remove the worktree %s: %s", path, exc)


async def _tests_on_merged(state: OrchestratorState, runtime: NodeRuntime, wave: WaveDict,
                           t: Texts) -> GoalDict | None:
    """The project's tests on the merged result; a goal that makes them pass when they fail."""
    ctx = runtime.context
    task = task_of(state)
    main = ctx.workspaces.resolve(task["workspace_path"])
    command = command_for(state, main)
    if command is None:
        return None
    step = CodingStep(instructions="tests of the merged wave", step_type=StepType.CODE, index=wave["number"])
    emit({"type": "tests_start", "command": command.label(), "wave": wave["number"]})
    run = await verification.run_tests(
        ctx, command=command, workspace=main, step=step, thread_id=current_thread_id(), task=task,
        goal_index=WAVE_TEST_GOAL_INDEX, attempt=1,
        on_log=lambda line: emit({"type": "agent_log", "agent": "tests", "line": line}))
    if run.outcome != "failed":
        return None
    ids = {g["id"] for g in Position.of(state).goals or []}
    goal_id = f"wave-{wave['number']}-tests"
    if goal_id in ids:
        return None
    return {"id": goal_id, "title": t.wave_tests_goal.format(wave=wave["number"]),
            "description": t.check_tests_failed.format(command=run.command, output=run.output),
            "complexity": Complexity.SIMPLE.value, "dependencies": list(wave["goals"])}
