"""A run's change as unified diffs (`GET /runs/{thread_id}/diff`): the whole run, each goal, each step.

Every step records the workspace's content before its first attempt (a git tree), and every
finished goal the content it left; the diffs run between those trees, the last part of each
to the working tree now. Nothing is computed from the branch or the commits, so the diff is
the same before the commit gate (nothing committed yet) and after it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from app.agents.snapshots import SnapshotError, WorkspaceSnapshots
from app.agents.workspace import WorkspaceError, WorkspaceManager
from app.graph.rules.step_changes import run_base
from app.schemas.runs import DiffPart, RunDiff

log = logging.getLogger(__name__)

RUN_DIFF_CHARS = 60_000
PART_DIFF_CHARS = 20_000


async def run_diff(snapshots: WorkspaceSnapshots, workspaces: WorkspaceManager, values: Mapping[str, Any]) -> RunDiff:
    task = values.get("task") or {}
    base = run_base(list(values.get("step_results") or []))
    if not task.get("workspace_path") or base is None:
        return RunDiff(note="No change recorded yet (no step has run in a git repository).")
    try:
        workspace = workspaces.resolve(str(task["workspace_path"]))
    except WorkspaceError as exc:
        return RunDiff(note=f"The workspace cannot be read: {exc}")
    try:
        if not await snapshots.is_repository(workspace):
            return RunDiff(note="The workspace is no longer a git repository.")
        parts = [DiffPart(label="Whole run", kind="run",
                          diff=await snapshots.diff_between(workspace, base, None, max_chars=RUN_DIFF_CHARS))]
        for label, kind, old, new in spans(values, base):
            parts.append(DiffPart(label=label, kind=kind,
                                  diff=await snapshots.diff_between(workspace, old, new, max_chars=PART_DIFF_CHARS)))
    except (SnapshotError, ValueError) as exc:  # a tree pruned or never written: say so, do not fail the page
        log.warning("no diff of the run: %s", exc)
        return RunDiff(note=f"The diff cannot be read: {exc}")
    return RunDiff(parts=parts)


def spans(values: Mapping[str, Any], run_start: str) -> list[tuple[str, str, str, str | None]]:
    """(label, kind, from tree, to tree or None for now) of each finished goal and each step
    with a recorded start, in the order they ran."""
    goals = list(values.get("goals") or [])
    titles = {str(g.get("id")): str(g.get("title") or g.get("id")) for g in goals}
    index_of = {str(g.get("id")): i for i, g in enumerate(goals)}
    found: list[tuple[str, str, str, str | None]] = []
    previous = run_start
    ends: dict[int, str] = {}
    for summary in values.get("goal_summaries") or []:
        gid, tree = str(summary.get("goal_id")), summary.get("tree")
        if not tree:
            continue
        number = index_of.get(gid, -1) + 1
        found.append((f"Goal {number}: {titles.get(gid, gid)}", "goal", previous, str(tree)))
        ends[number - 1] = str(tree)
        previous = str(tree)
    starts: dict[tuple[int, int], tuple[str, str]] = {}
    for result in sorted(values.get("step_results") or [], key=lambda r: int(r.get("attempt", 1)), reverse=True):
        if result.get("base_tree"):
            key = (int(result.get("goal_index", 0)), int(result.get("step_index", 0)))
            starts[key] = (str(result["base_tree"]), str(result.get("title") or ""))  # the first attempt's wins
    ordered = sorted(starts)
    for position, (goal, step) in enumerate(ordered):
        base, title = starts[(goal, step)]
        following = ordered[position + 1] if position + 1 < len(ordered) else None
        end = starts[following][0] if following and following[0] == goal else ends.get(goal)
        label = f"Goal {goal + 1}, step {step + 1}" + (f": {title}" if title else "")
        found.append((label, "step", base, end))
    return found
