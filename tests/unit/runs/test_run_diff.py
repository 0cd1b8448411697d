"""`GET /runs/{id}/diff` from the trees a run recorded, on a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.snapshots import WorkspaceSnapshots
from app.agents.workspace import WorkspaceManager
from app.runs.diffs import run_diff
from tests.support import make_git_repo


@pytest.mark.asyncio
async def test_the_whole_run_each_goal_and_each_step_as_unified_diffs(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "ws")
    snapshots = WorkspaceSnapshots()
    start = await snapshots.current_tree(repo)
    (repo / "alpha.py").write_text("ALPHA = 1\n")
    after_alpha = await snapshots.current_tree(repo)
    (repo / "beta.py").write_text("BETA = 2\n")  # the step in progress: not recorded yet
    values = {
        "task": {"workspace_path": "ws"},
        "goals": [{"id": "g1", "title": "Alpha"}, {"id": "g2", "title": "Beta"}],
        "goal_summaries": [{"goal_id": "g1", "tree": after_alpha}],
        "step_results": [{"goal_index": 0, "step_index": 0, "attempt": 1, "base_tree": start, "title": "alpha"},
                         {"goal_index": 1, "step_index": 0, "attempt": 1, "base_tree": after_alpha, "title": "beta"}],
    }

    diff = await run_diff(snapshots, WorkspaceManager(tmp_path), values)

    parts = {part.label: part.diff for part in diff.parts}
    assert list(parts) == ["Whole run", "Goal 1: Alpha", "Goal 1, step 1: alpha", "Goal 2, step 1: beta"]
    assert "+ALPHA = 1" in parts["Whole run"] and "+BETA = 2" in parts["Whole run"]
    assert "+ALPHA = 1" in parts["Goal 1: Alpha"] and "beta.py" not in parts["Goal 1: Alpha"]
    assert "+BETA = 2" in parts["Goal 2, step 1: beta"] and "alpha.py" not in parts["Goal 2, step 1: beta"]


@pytest.mark.asyncio
async def test_no_diff_says_why(tmp_path: Path) -> None:
    workspaces = WorkspaceManager(tmp_path)
    (tmp_path / "plain").mkdir()
    none = await run_diff(WorkspaceSnapshots(), workspaces, {"task": {"workspace_path": "plain"}})
    assert none.parts == [] and "No change recorded yet" in (none.note or "")
    values = {"task": {"workspace_path": "plain"}, "step_results": [{"step_index": 0, "base_tree": "a" * 40}]}
    gone = await run_diff(WorkspaceSnapshots(), workspaces, values)
    assert gone.parts == [] and gone.note == "The workspace is no longer a git repository."
    escaping = await run_diff(WorkspaceSnapshots(), workspaces, {**values, "task": {"workspace_path": "../x"}})
    assert escaping.parts == [] and "cannot be read" in (escaping.note or "")
    repo = make_git_repo(tmp_path / "ws")
    pruned = await run_diff(WorkspaceSnapshots(), workspaces, {**values, "task": {"workspace_path": "ws"}})
    assert repo.exists() and pruned.parts == [] and "cannot be read" in (pruned.note or "")
