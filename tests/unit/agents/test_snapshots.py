"""Workspace snapshots (app/agents/snapshots.py) on real temporary git repositories and real processes."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from app.agents.snapshots import Snapshot, SnapshotError, WorkspaceSnapshots
from tests.support import git, make_git_repo, wait_until


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with an executable script, a nested file, ignore rules and a stash entry."""
    path = make_git_repo(tmp_path / "repo")
    (path / "src").mkdir()
    (path / "src" / "app.py").write_text("print('app')\n")
    (path / "src" / "old.py").write_text("old = True\n")
    (path / "run.sh").write_text("#!/bin/sh\necho run\n")
    (path / "run.sh").chmod(0o755)
    (path / "notes.txt").write_text("notes\n")
    (path / ".gitignore").write_text("*.log\n__pycache__/\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "files")
    (path / "notes.txt").write_text("stashed change\n")
    git(path, "stash", "-q")
    (path / ".git" / "info" / "exclude").write_text("local.txt\n")
    return path


@pytest.fixture
def snapshots() -> WorkspaceSnapshots:
    return WorkspaceSnapshots()


def user_state(repo: Path) -> dict[str, object]:
    """Everything of the user's git state a snapshot must never change (read without writing the index)."""
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "symbolic": git(repo, "symbolic-ref", "HEAD"),
        "refs": git(repo, "for-each-ref"),
        "stash": git(repo, "stash", "list"),
        "index": (repo / ".git" / "index").read_bytes(),
    }


def status(repo: Path) -> str:
    return git(repo, "status", "--porcelain=v1", "--untracked-files=all")


def is_executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR)


# ---------------------------------------------------------------------- ensure / recorded
async def test_ensure_records_the_base_once_and_returns_it_to_later_calls_and_new_instances(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    first = await snapshots.ensure(repo, "task-1.step_2")
    (repo / "README.md").write_text("changed after the snapshot\n")

    assert first.created
    assert await snapshots.ensure(repo, "task-1.step_2") == Snapshot(tree=first.tree, created=False)
    assert await WorkspaceSnapshots().ensure(repo, "task-1.step_2") == Snapshot(tree=first.tree, created=False)
    assert (repo / ".git" / "jervis" / "snapshots" / "task-1.step_2").read_text().strip() == first.tree


async def test_recorded_reads_a_base_without_recording_one(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    assert await snapshots.recorded(repo, "step") is None
    assert not (repo / ".git" / "jervis" / "snapshots" / "step").exists()

    base = await snapshots.ensure(repo, "step")

    assert await snapshots.recorded(repo, "step") == base.tree


async def test_ensure_records_different_trees_under_different_keys(repo: Path,
                                                                  snapshots: WorkspaceSnapshots) -> None:
    first = await snapshots.ensure(repo, "a")
    (repo / "README.md").write_text("changed\n")
    second = await snapshots.ensure(repo, "b")

    assert second.created and second.tree != first.tree


@pytest.mark.parametrize("key", ["", "a/b", "../x", "..", "with space", "x" * 201, "ümlaut", "a\x00b"])
async def test_a_bad_key_raises_value_error(repo: Path, snapshots: WorkspaceSnapshots, key: str) -> None:
    with pytest.raises(ValueError, match="snapshot key must be"):
        await snapshots.ensure(repo, key)
    with pytest.raises(ValueError, match="snapshot key must be"):
        await snapshots.recorded(repo, key)


async def test_a_key_of_200_allowed_characters_is_accepted(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    assert (await snapshots.ensure(repo, "aZ0._-" * 33 + "xy")).created


async def test_current_tree_equals_the_tree_of_head_when_the_work_tree_is_clean(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    assert await snapshots.current_tree(repo) == git(repo, "rev-parse", "HEAD^{tree}").strip()


async def test_temporary_indexes_are_removed(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "k")
    (repo / "README.md").write_text("changed\n")
    await snapshots.restore(repo, base.tree)

    assert sorted(p.name for p in (repo / ".git" / "jervis").iterdir()) == ["snapshots"]


async def test_a_same_size_edit_in_the_second_the_index_was_written_is_still_seen(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    """The temporary index keeps the real one's mtime, so git's racy-clean check still re-reads such a
    file; a fresh mtime on the copy would make git trust the stale stat data and miss the edit."""
    (repo / "README.md").write_text("aaaa\n")
    git(repo, "add", "README.md")  # index written in the same second as the edit below
    (repo / "README.md").write_text("bbbb\n")
    await asyncio.sleep(1.1)  # the temporary index is made a second later

    tree = await snapshots.current_tree(repo)

    assert git(repo, "cat-file", "-p", f"{tree}:README.md") == "bbbb\n"


async def test_a_split_index_is_read_and_no_shared_index_file_is_left_behind(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    git(repo, "config", "core.splitIndex", "true")
    git(repo, "update-index", "--split-index")
    git_files_before = sorted(p.name for p in (repo / ".git").iterdir())
    state_before = user_state(repo)
    base = await snapshots.ensure(repo, "step")
    (repo / "README.md").write_text("changed\n")
    (repo / "extra.txt").write_text("new\n")

    assert await snapshots.restore(repo, base.tree) == ["README.md", "extra.txt"]
    assert user_state(repo) == state_before
    assert sorted(p.name for p in (repo / ".git").iterdir()) == sorted([*git_files_before, "jervis"])


# ---------------------------------------------------------------------- restore
async def test_restore_brings_back_the_working_tree_of_the_base_and_leaves_git_state_alone(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    # uncommitted work of earlier steps, an ignored file and an excluded one, all before the snapshot
    (repo / "src" / "app.py").write_text("print('earlier step')\n")
    (repo / "wip.txt").write_text("earlier step's new file\n")
    (repo / "build.log").write_text("log before\n")
    (repo / "local.txt").write_text("local before\n")
    status_before, state_before = status(repo), user_state(repo)
    base = await snapshots.ensure(repo, "step")

    # what the failed attempt did
    (repo / "README.md").write_text("# rewritten\n")
    (repo / "src" / "app.py").write_text("print('attempt')\n")
    (repo / "src" / "old.py").unlink()
    (repo / "wip.txt").unlink()
    (repo / "new" / "deep").mkdir(parents=True)
    (repo / "new" / "deep" / "module.py").write_text("x = 1\n")
    (repo / "run.sh").chmod(0o644)
    (repo / "notes.txt").chmod(0o755)
    (repo / "build.log").write_text("log after\n")
    (repo / "local.txt").write_text("local after\n")
    (repo / "src" / "__pycache__").mkdir()
    (repo / "src" / "__pycache__" / "app.pyc").write_bytes(b"\0pyc")

    changed = await snapshots.restore(repo, base.tree)

    assert changed == ["README.md", "new/deep/module.py", "notes.txt", "run.sh", "src/app.py", "src/old.py",
                       "wip.txt"]
    assert user_state(repo) == state_before  # HEAD, refs, stash and .git/index byte for byte
    assert (repo / "README.md").read_text() == "# project\n"
    assert (repo / "src" / "app.py").read_text() == "print('earlier step')\n"
    assert (repo / "src" / "old.py").read_text() == "old = True\n"
    assert (repo / "wip.txt").read_text() == "earlier step's new file\n"
    assert not (repo / "new").exists()
    assert is_executable(repo / "run.sh") and not is_executable(repo / "notes.txt")
    assert (repo / "build.log").read_text() == "log after\n"
    assert (repo / "local.txt").read_text() == "local after\n"
    assert (repo / "src" / "__pycache__" / "app.pyc").read_bytes() == b"\0pyc"
    assert status(repo) == status_before
    assert await snapshots.current_tree(repo) == base.tree


async def test_restore_of_an_unchanged_tree_returns_nothing(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    (repo / "wip.txt").write_text("uncommitted\n")
    base = await snapshots.ensure(repo, "step")

    assert await snapshots.restore(repo, base.tree) == []
    assert (repo / "wip.txt").read_text() == "uncommitted\n"


async def test_restore_keeps_staged_changes_made_before_the_snapshot(repo: Path,
                                                                    snapshots: WorkspaceSnapshots) -> None:
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    (repo / "README.md").write_text("staged, then edited\n")
    staged_before, state_before = git(repo, "diff", "--cached"), user_state(repo)
    base = await snapshots.ensure(repo, "step")
    (repo / "README.md").write_text("attempt\n")

    assert await snapshots.restore(repo, base.tree) == ["README.md"]
    assert (repo / "README.md").read_text() == "staged, then edited\n"
    assert user_state(repo) == state_before
    assert git(repo, "diff", "--cached") == staged_before


async def test_restore_undoes_type_changes_between_files_directories_and_symlinks(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    (repo / "link").symlink_to("README.md")
    base = await snapshots.ensure(repo, "step")
    (repo / "link").unlink()
    (repo / "link").write_text("a file now\n")  # symlink -> file
    (repo / "src" / "app.py").unlink()
    (repo / "src" / "old.py").unlink()
    (repo / "src").rmdir()
    (repo / "src").write_text("a file where a directory was\n")  # directory -> file
    (repo / "notes.txt").unlink()
    (repo / "notes.txt").mkdir()
    (repo / "notes.txt" / "inner.txt").write_text("a directory where a file was\n")  # file -> directory

    changed = await snapshots.restore(repo, base.tree)

    assert changed == ["link", "notes.txt", "notes.txt/inner.txt", "src", "src/app.py", "src/old.py"]
    assert (repo / "link").is_symlink() and os.readlink(repo / "link") == "README.md"
    assert (repo / "src" / "app.py").read_text() == "print('app')\n"
    assert (repo / "notes.txt").read_text() == "notes\n"
    assert await snapshots.current_tree(repo) == base.tree


async def test_restore_keeps_files_the_base_ignored_even_when_the_attempt_stopped_ignoring_them(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    (repo / "debug.log").write_text("the user's log\n")
    base = await snapshots.ensure(repo, "step")
    (repo / ".gitignore").write_text("__pycache__/\n")  # *.log no longer ignored: debug.log looks added

    assert await snapshots.restore(repo, base.tree) == [".gitignore"]
    assert (repo / "debug.log").read_text() == "the user's log\n"


async def test_restore_does_not_remove_a_directory_that_still_holds_ignored_files(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "step")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    (repo / "pkg" / "run.log").write_text("ignored\n")

    assert await snapshots.restore(repo, base.tree) == ["pkg/mod.py"]
    assert sorted(p.name for p in (repo / "pkg").iterdir()) == ["run.log"]


async def test_restore_works_in_a_linked_worktree_whose_dot_git_is_a_file(repo: Path, tmp_path: Path,
                                                                          snapshots: WorkspaceSnapshots) -> None:
    linked = tmp_path / "repo.jervis-goals" / "linked"  # a `.git` file anywhere else is refused
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    main_index = (repo / ".git" / "index").read_bytes()
    base = await snapshots.ensure(linked, "step")
    (linked / "README.md").write_text("changed in the worktree\n")
    (linked / "extra.txt").write_text("new\n")

    assert await snapshots.restore(linked, base.tree) == ["README.md", "extra.txt"]
    assert (linked / "README.md").read_text() == "# project\n" and not (linked / "extra.txt").exists()
    assert (repo / ".git" / "index").read_bytes() == main_index
    assert (repo / ".git" / "worktrees" / "linked" / "jervis" / "snapshots" / "step").is_file()


async def test_snapshots_work_in_a_repository_without_commits_or_index(tmp_path: Path,
                                                                      snapshots: WorkspaceSnapshots) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    base = await snapshots.ensure(repo, "step")
    (repo / "a.txt").write_text("changed\n")

    assert await snapshots.restore(repo, base.tree) == ["a.txt"]
    assert (repo / "a.txt").read_text() == "a\n"
    assert not (repo / ".git" / "index").exists()


async def test_an_embedded_repository_without_a_commit_does_not_break_the_snapshot(
        repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "step")
    (repo / "sub").mkdir()
    git(repo / "sub", "init", "-q")
    (repo / "README.md").write_text("changed\n")

    assert await snapshots.restore(repo, base.tree) == ["README.md"]
    assert (repo / "sub" / ".git").is_dir()


# ---------------------------------------------------------------------- diff / diff_stat
async def test_diff_shows_an_added_line_against_the_base(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "step")
    with (repo / "src" / "app.py").open("a") as handle:
        handle.write("print('added')\n")
    (repo / "brand_new.txt").write_text("hello\n")

    diff = await snapshots.diff(repo, base.tree)

    assert "diff --git a/src/app.py b/src/app.py" in diff
    assert "+print('added')" in diff
    assert "+hello" in diff
    assert "truncated" not in diff


async def test_diff_is_truncated_to_max_chars_with_a_final_line(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "step")
    (repo / "big.txt").write_text("".join(f"line {n}\n" for n in range(2000)))
    full = await snapshots.diff(repo, base.tree, max_chars=1_000_000)

    diff = await snapshots.diff(repo, base.tree, max_chars=500)

    body, last = diff.rsplit("\n", 1)
    assert len(body) + 1 <= 500 and full.startswith(body + "\n")
    assert last == f"… (diff truncated: {len(full) - len(body) - 1} more characters)"


async def test_diff_stat_names_the_changed_file(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "step")
    (repo / "src" / "app.py").write_text("print('changed')\nprint('more')\n")

    stat_text = await snapshots.diff_stat(repo, base.tree)

    assert "src/app.py" in stat_text
    assert "1 file changed" in stat_text


async def test_diff_of_an_unchanged_tree_is_empty(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    base = await snapshots.ensure(repo, "step")

    assert await snapshots.diff(repo, base.tree) == ""
    assert await snapshots.diff_stat(repo, base.tree) == ""


# ---------------------------------------------------------------------- is_repository
async def test_is_repository_is_true_for_the_top_level_of_a_work_tree(repo: Path,
                                                                      snapshots: WorkspaceSnapshots) -> None:
    assert await snapshots.is_repository(repo)


async def test_is_repository_is_false_for_a_plain_directory(tmp_path: Path, snapshots: WorkspaceSnapshots) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert not await snapshots.is_repository(plain)


async def test_is_repository_is_false_for_a_subdirectory_of_a_repository(repo: Path,
                                                                        snapshots: WorkspaceSnapshots) -> None:
    assert not await snapshots.is_repository(repo / "src")


async def test_is_repository_is_false_for_a_missing_directory_or_a_missing_git(
        repo: Path, tmp_path: Path, snapshots: WorkspaceSnapshots) -> None:
    assert not await snapshots.is_repository(tmp_path / "missing")
    assert not await WorkspaceSnapshots(git=str(tmp_path / "no-git")).is_repository(repo)


# ---------------------------------------------------------------------- failures
async def test_an_unknown_base_raises_snapshot_error_with_gits_message(repo: Path,
                                                                      snapshots: WorkspaceSnapshots) -> None:
    with pytest.raises(SnapshotError, match=r"0{40}"):
        await snapshots.restore(repo, "0" * 40)
    with pytest.raises(SnapshotError):
        await snapshots.diff(repo, "0" * 40)


async def test_a_base_that_is_not_a_tree_id_raises_value_error(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    with pytest.raises(ValueError, match="base must be a full lowercase tree id"):
        await snapshots.restore(repo, "--output=/tmp/x")


async def test_operations_outside_a_repository_raise_snapshot_error(tmp_path: Path,
                                                                    snapshots: WorkspaceSnapshots) -> None:
    with pytest.raises(SnapshotError, match="not a repository"):
        await snapshots.ensure(tmp_path, "step")


async def test_a_git_that_misses_the_deadline_is_killed_and_raises_snapshot_error(
        repo: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    slow_git = tmp_path / "slow-git"
    slow_git.write_text(f"#!/bin/sh\necho $$ > {pids}\nsleep 30 &\necho $! >> {pids}\nwait\n")
    slow_git.chmod(0o755)
    snapshots = WorkspaceSnapshots(git=str(slow_git), timeout_seconds=0.3)

    started = time.monotonic()
    with pytest.raises(SnapshotError, match="timed out"):
        await snapshots.current_tree(repo)

    assert time.monotonic() - started < 3
    script_pid, sleep_pid = (int(line) for line in pids.read_text().split())
    assert not is_running(script_pid)
    assert wait_for_exit(sleep_pid), "the wrapper's child outlived the deadline"


async def test_a_cancelled_call_takes_its_git_down_with_it(repo: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    slow_git = tmp_path / "slow-git"
    slow_git.write_text(f"#!/bin/sh\necho $$ > {pids}\nexec sleep 30\n")
    slow_git.chmod(0o755)
    call = asyncio.create_task(WorkspaceSnapshots(git=str(slow_git)).current_tree(repo))
    await asyncio.to_thread(wait_until, lambda: pids.exists() and pids.read_text().strip(), 5.0, "the fake git")

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert wait_for_exit(int(pids.read_text()))


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait for a reaper that a container's init is not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def wait_for_exit(pid: int, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not is_running(pid):
            return True
        time.sleep(0.02)
    return False


async def test_read_base_gives_a_file_as_it_was_before_the_step(repo: Path, snapshots: WorkspaceSnapshots) -> None:
    before = (repo / "src" / "app.py").read_bytes()
    (repo / "untracked.txt").write_text("not committed, still in the base\n")
    base = await snapshots.ensure(repo, "step")
    (repo / "src" / "app.py").write_text("print('changed')\n")
    (repo / "created.txt").write_text("new\n")

    assert await snapshots.read_base(repo, base.tree, "src/app.py") == before
    assert await snapshots.read_base(repo, base.tree, "untracked.txt") == b"not committed, still in the base\n"
    assert await snapshots.read_base(repo, base.tree, "created.txt") is None  # the step created it
    assert await snapshots.read_base(repo, base.tree, "src/app.py", max_bytes=len(before) - 1) is None


async def test_programs_an_agent_planted_in_the_git_config_never_run_in_the_service(
        repo: Path, snapshots: WorkspaceSnapshots, tmp_path: Path) -> None:
    """`.git/` is inside the agent's sandbox: an fsmonitor program or a hook it sets there would run
    as the service, outside the sandbox, the next time the service's git touches the workspace."""
    marker = tmp_path / "ran.txt"
    program = repo / ".git" / "planted.sh"
    program.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    program.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(program))
    (repo / ".git" / "hooks" / "post-index-change").write_text(program.read_text())
    (repo / ".git" / "hooks" / "post-index-change").chmod(0o755)
    (repo / "new.txt").write_text("x\n")

    tree = await snapshots.current_tree(repo)

    assert tree and not marker.exists()
    git(repo, "status", "--short")  # the same config does run it for a plain git: the test can fail
    assert marker.exists()
