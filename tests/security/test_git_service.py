"""The hostile agent against the service's own git (app/agents/safe_git.py): what it planted in the
workspace's git metadata, had it got there, must make the service's snapshots, worktrees and merges
(real git, outside any sandbox) run none of its programs, and the service must say why it refused."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from app.agents.safe_git import ATTRIBUTES, UnsafeRepositoryError
from app.agents.snapshots import WorkspaceSnapshots
from app.agents.worktrees import WORKTREES_SUFFIX, GoalWorktrees
from tests.security.git_attacks import (
    Planted,
    agent_program,
    configure_drivers,
    foreign_git_dir,
    plant_hook,
    use_drivers,
)
from tests.support import git, make_git_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_git_repo(tmp_path / "data" / "ws")
    (path / "a.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "a")
    return path


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    return agent_program(tmp_path / "agent")


def plain_git_runs_it(repo: Path, planted: Planted) -> bool:
    """The control: the same metadata does run the program for a plain `git add` (so each test can fail)."""
    subprocess.run(["git", "add", "-A"], cwd=repo, capture_output=True, check=False)
    return planted.ran()


def plain_merge_runs_it(repo: Path, base: str, trees: list[str], planted: Planted) -> bool:
    goal_commits = [git(repo, "commit-tree", tree, "-p", base, "-m", "goal").strip() for tree in trees]
    subprocess.run(["git", "merge-tree", "--write-tree", *goal_commits], cwd=repo, capture_output=True, check=False)
    return planted.ran()


async def test_a_commondir_redirect_with_a_filter_is_refused_and_runs_nothing(
        repo: Path, planted: Planted, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    (repo / ".git" / "commondir").write_text(f"{evil}\n")
    use_drivers(repo)
    (repo / "new.txt").write_text("written by the agent\n")
    snapshots = WorkspaceSnapshots()

    with pytest.raises(UnsafeRepositoryError, match=r"\.git/commondir exists"):
        await snapshots.current_tree(repo)
    with pytest.raises(UnsafeRepositoryError, match="commondir"):
        await snapshots.ensure(repo, "step")
    with caplog.at_level(logging.WARNING):
        assert not await snapshots.is_repository(repo)
    assert "commondir exists" in caplog.text  # the service says why it takes no snapshot

    assert not planted.ran()
    assert plain_git_runs_it(repo, planted)


async def test_a_git_dir_replaced_by_a_gitdir_file_is_refused_and_runs_nothing(
        repo: Path, planted: Planted, tmp_path: Path) -> None:
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    (repo / ".git").rename(tmp_path / "agent" / "moved-away")
    (repo / ".git").write_text(f"gitdir: {evil}\n")
    use_drivers(repo)

    with pytest.raises(UnsafeRepositoryError, match="'gitdir:' file where the service made a git directory"):
        await WorkspaceSnapshots().current_tree(repo)

    assert not planted.ran()
    assert plain_git_runs_it(repo, planted)


async def test_drivers_hooks_and_fsmonitor_in_the_repository_config_never_run(
        repo: Path, planted: Planted) -> None:
    """Filter (clean and smudge), textconv, external diff, fsmonitor, hooks (by `core.hooksPath` and
    in `.git/hooks`), named by a `.gitattributes` macro: a snapshot, a restore, a diff and a read
    of the base work, and none of them runs."""
    configure_drivers(repo / ".git" / "config", planted)
    plant_hook(repo / ".git", planted)
    use_drivers(repo)
    snapshots = WorkspaceSnapshots()
    base = await snapshots.ensure(repo, "step")
    (repo / "a.txt").write_text("one\nTWO\nthree\nfour\nfive\n")
    (repo / "added.txt").write_text("added by the step\n")

    diff = await snapshots.diff(repo, base.tree)
    stat = await snapshots.diff_stat(repo, base.tree)
    assert await snapshots.read_base(repo, base.tree, "a.txt") == b"one\ntwo\nthree\nfour\nfive\n"
    assert sorted(await snapshots.restore(repo, base.tree)) == ["a.txt", "added.txt"]

    assert "+TWO" in diff and "a.txt" in stat
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
    assert not planted.ran()
    assert (repo / ".git" / "info" / "attributes").read_bytes() == ATTRIBUTES
    assert plain_git_runs_it(repo, planted)


async def test_alternates_are_refused(repo: Path, tmp_path: Path) -> None:
    """Objects from a store of the agent's would become what the service snapshots and restores."""
    foreign = make_git_repo(tmp_path / "agent" / "objects-of-the-agent")
    (repo / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{foreign / '.git' / 'objects'}\n")

    with pytest.raises(UnsafeRepositoryError, match="alternates exists"):
        await WorkspaceSnapshots().current_tree(repo)


async def test_an_info_attributes_the_service_did_not_write_is_refused(repo: Path, planted: Planted) -> None:
    """`info/attributes` outranks every `.gitattributes`, the service's own override included."""
    configure_drivers(repo / ".git" / "config", planted)
    (repo / ".git" / "info" / "attributes").write_text("* filter=x diff=x\n")
    (repo / "new.txt").write_text("x\n")

    with pytest.raises(UnsafeRepositoryError, match="info/attributes was not written by the service"):
        await WorkspaceSnapshots().current_tree(repo)

    assert not planted.ran()
    assert plain_git_runs_it(repo, planted)


async def test_worktrees_and_their_merge_run_no_smudge_filter_merge_driver_or_hook(
        repo: Path, planted: Planted) -> None:
    """A goal's worktree is checked out (smudge filter, post-checkout hook), both goals change a.txt
    (the merge driver), the worktrees are removed (hooks)."""
    configure_drivers(repo / ".git" / "config", planted)
    plant_hook(repo / ".git", planted)
    use_drivers(repo)
    snapshots, worktrees = WorkspaceSnapshots(), GoalWorktrees()
    base = await worktrees.base_commit(repo, await snapshots.current_tree(repo))
    goals = repo.parent / f"{repo.name}{WORKTREES_SUFFIX}"
    trees = []
    for name, text in (("g1", "ONE\ntwo\nthree\nfour\nfive\n"), ("g2", "one\ntwo\nthree\nfour\nFIVE\n")):
        await worktrees.create(repo, goals / name, f"jervis/goals/{name}", base)
        (goals / name / "a.txt").write_text(text)
        trees.append(await snapshots.current_tree(goals / name))
    first = await worktrees.merge(repo, base, base, trees[0], "goal 1")
    second = await worktrees.merge(repo, first.merged, base, trees[1], "goal 2")
    for name in ("g1", "g2"):
        await worktrees.remove(repo, goals / name, f"jervis/goals/{name}")

    assert second.conflicts == []
    assert git(repo, "cat-file", "-p", f"{second.tree}:a.txt") == "ONE\ntwo\nthree\nfour\nFIVE\n"
    assert not planted.ran()
    # the control: without the service's override, plain git runs the merge driver on the same merge
    (repo / ".git" / "info" / "attributes").unlink()
    assert plain_merge_runs_it(repo, base, trees, planted)


async def test_a_goal_worktree_whose_git_file_points_elsewhere_is_refused(
        repo: Path, planted: Planted, tmp_path: Path) -> None:
    worktrees = GoalWorktrees()
    worktree = repo.parent / f"{repo.name}{WORKTREES_SUFFIX}" / "g1"
    await worktrees.create(repo, worktree, "jervis/goals/g1", await worktrees.base_commit(
        repo, await WorkspaceSnapshots().current_tree(repo)))
    assert await WorkspaceSnapshots().current_tree(worktree)  # as the service made it: fine
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    (worktree / ".git").write_text(f"gitdir: {evil}\n")
    use_drivers(worktree)

    with pytest.raises(UnsafeRepositoryError, match="not to the worktree's folder"):
        await WorkspaceSnapshots().current_tree(worktree)

    assert not planted.ran()
    assert plain_git_runs_it(worktree, planted)


async def test_a_goal_worktree_whose_folder_has_a_commondir_of_the_agents_is_refused(
        repo: Path, planted: Planted, tmp_path: Path) -> None:
    worktrees = GoalWorktrees()
    worktree = repo.parent / f"{repo.name}{WORKTREES_SUFFIX}" / "g1"
    await worktrees.create(repo, worktree, "jervis/goals/g1", await worktrees.base_commit(
        repo, await WorkspaceSnapshots().current_tree(repo)))
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    (repo / ".git" / "worktrees" / "g1" / "commondir").write_text(f"{evil}\n")
    use_drivers(worktree)

    with pytest.raises(UnsafeRepositoryError, match="commondir does not lead to"):
        await WorkspaceSnapshots().current_tree(worktree)

    assert not planted.ran()
    assert plain_git_runs_it(worktree, planted)


async def test_the_services_own_folder_in_the_git_dir_is_not_followed_through_a_symlink(
        repo: Path, tmp_path: Path) -> None:
    """Snapshot records and temporary indexes go to `.git/jervis/`: linked elsewhere, they would be
    written (and an index copied, a record trusted) wherever the agent chose."""
    elsewhere = tmp_path / "agent" / "elsewhere"
    elsewhere.mkdir(parents=True)
    (repo / ".git" / "jervis").symlink_to(elsewhere, target_is_directory=True)

    with pytest.raises(UnsafeRepositoryError, match="symlink or not a directory"):
        await WorkspaceSnapshots().ensure(repo, "step")

    assert list(elsewhere.iterdir()) == []
