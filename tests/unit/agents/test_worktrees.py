"""Worktrees of goals side by side and their merge (app/agents/worktrees.py), on real git."""

from __future__ import annotations

from pathlib import Path

from app.agents.snapshots import WorkspaceSnapshots
from app.agents.worktrees import GoalWorktrees
from tests.support import git, make_git_repo


async def _goal(worktrees: GoalWorktrees, main: Path, name: str, base: str, files: dict[str, str]) -> str:
    """A goal's worktree from `base`, `files` written in it: its content as a tree."""
    path = main.parent / f"{main.name}.jervis-goals" / name
    await worktrees.create(main, path, f"jervis/goals/{name}", base)
    for rel, text in files.items():
        (path / rel).write_text(text)
    return await WorkspaceSnapshots().current_tree(path)


async def test_goals_that_touch_different_files_merge_and_a_conflict_names_its_files(tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "repo")
    (main / "shared.py").write_text("VALUE = 0\n")
    (main / "dirty.txt").write_text("the user's uncommitted work\n")  # the wave starts from the working tree
    worktrees, snapshots = GoalWorktrees(), WorkspaceSnapshots()
    base_tree = await snapshots.current_tree(main)
    base = await worktrees.base_commit(main, base_tree)
    a = await _goal(worktrees, main, "a", base, {"alpha.py": "A = 1\n", "shared.py": "VALUE = 1\n"})
    c = await _goal(worktrees, main, "c", base, {"gamma.py": "C = 3\n"})
    d = await _goal(worktrees, main, "d", base, {"shared.py": "VALUE = 2\n"})
    assert (main.parent / "repo.jervis-goals/a/dirty.txt").read_text() == "the user's uncommitted work\n"

    first = await worktrees.merge(main, base, base, a, "a")
    second = await worktrees.merge(main, first.merged, base, c, "c")
    third = await worktrees.merge(main, second.merged, base, d, "d")

    assert first.conflicts == [] and second.conflicts == []
    assert third.conflicts == ["shared.py"] and third.merged == second.merged and third.tree == second.tree
    await snapshots.restore(main, second.tree)
    assert (main / "alpha.py").read_text() == "A = 1\n" and (main / "gamma.py").read_text() == "C = 3\n"
    assert (main / "shared.py").read_text() == "VALUE = 1\n"
    assert git(main, "diff", "--cached", "--name-only") == ""  # the index is untouched
    assert git(main, "log", "--format=%s").strip() == "initial"  # HEAD and the branch are untouched


async def test_a_worktree_is_created_once_and_removed_with_its_branch_and_folder(tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "repo")
    worktrees = GoalWorktrees()
    base = await worktrees.base_commit(main, await WorkspaceSnapshots().current_tree(main))
    path = main.parent / "repo.jervis-goals" / "g0"
    await worktrees.create(main, path, "jervis/goals/g0", base)
    (path / "work.py").write_text("kept\n")
    await worktrees.create(main, path, "jervis/goals/g0", base)  # a resumed goal keeps its work
    assert (path / "work.py").read_text() == "kept\n"

    await worktrees.remove(main, path, "jervis/goals/g0")
    await worktrees.remove(main, path, "jervis/goals/g0")  # again: nothing left to remove is fine

    assert not path.parent.exists()
    assert git(main, "worktree", "list").count("\n") == 1 and "jervis/goals" not in git(main, "branch", "--list")
