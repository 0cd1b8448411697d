"""Git on a workspace (app/agents/git.py), against real repositories in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agents.git import GitError, GitWorkspace
from tests.support import git, make_git_repo

TRAILER = "Jervis-Thread: thread-t1-abcd1234"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "repo")


def commit_count(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD").strip())


async def test_is_repo_tells_a_repository_from_a_plain_directory(repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert await GitWorkspace(repo).is_repo() is True
    assert await GitWorkspace(plain).is_repo() is False


async def test_commit_is_idempotent_when_the_trailer_already_exists(repo: Path) -> None:
    (repo / "app.py").write_text("print(1)\n")
    workspace = GitWorkspace(repo)
    first = await workspace.commit(["app.py"], "task(t1): add app", trailer=TRAILER)
    (repo / "app.py").write_text("print(2)\n")  # a re-run after resume must not commit again
    second = await workspace.commit(["app.py"], "task(t1): add app", trailer=TRAILER)
    assert first == second == git(repo, "rev-parse", "HEAD").strip()
    assert commit_count(repo) == 2
    body = git(repo, "log", "-1", "--format=%B")
    assert body.startswith("task(t1): add app\n") and TRAILER in body
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "Jervis <jervis@localhost>"


async def test_commit_makes_a_new_commit_for_another_thread(repo: Path) -> None:
    workspace = GitWorkspace(repo)
    (repo / "a.py").write_text("a\n")
    first = await workspace.commit(["a.py"], "first", trailer=TRAILER)
    (repo / "b.py").write_text("b\n")
    second = await workspace.commit(["b.py"], "second", trailer="Jervis-Thread: thread-t2-ffff0000")
    assert first != second and commit_count(repo) == 3


async def test_commit_stages_only_the_given_files(repo: Path) -> None:
    (repo / "wanted.py").write_text("yes\n")
    (repo / "unrelated.py").write_text("no\n")
    (repo / "staged_by_user.py").write_text("user\n")
    git(repo, "add", "staged_by_user.py")
    (repo / "README.md").write_text("# changed by agent\n")
    await GitWorkspace(repo).commit(["wanted.py", "README.md"], "msg", trailer=TRAILER)
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(committed) == ["README.md", "wanted.py"]
    status = git(repo, "status", "--porcelain")
    assert "?? unrelated.py" in status and "A  staged_by_user.py" in status


async def test_commit_records_a_deleted_file(repo: Path) -> None:
    (repo / "README.md").unlink()
    await GitWorkspace(repo).commit(["README.md"], "remove readme", trailer=TRAILER)
    assert git(repo, "show", "--name-status", "--format=", "HEAD").split() == ["D", "README.md"]


async def test_commit_raises_git_error_when_there_is_nothing_to_commit(repo: Path) -> None:
    with pytest.raises(GitError, match="git"):
        await GitWorkspace(repo).commit(["README.md"], "nothing", trailer=TRAILER)


async def test_checkout_branch_creates_then_switches_to_an_existing_branch(repo: Path) -> None:
    workspace = GitWorkspace(repo)
    await workspace.checkout_branch("task/t1")
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "task/t1"
    await workspace.checkout_branch("task/t1")  # already there: no-op
    git(repo, "checkout", "-q", "main")
    await workspace.checkout_branch("task/t1")
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "task/t1"
    assert git(repo, "branch", "--list", "task/t1").strip().endswith("task/t1")


async def test_checkout_branch_keeps_uncommitted_work(repo: Path) -> None:
    (repo / "new.py").write_text("work\n")
    await GitWorkspace(repo).checkout_branch("task/t1")
    assert (repo / "new.py").read_text() == "work\n"


async def test_push_updates_the_branch_on_a_bare_origin(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    workspace = GitWorkspace(repo)
    await workspace.checkout_branch("task/t1")
    (repo / "a.py").write_text("a\n")
    sha = await workspace.commit(["a.py"], "msg", trailer=TRAILER)
    await workspace.push("task/t1")
    assert git(remote, "rev-parse", "refs/heads/task/t1").strip() == sha


async def test_push_raises_git_error_when_there_is_no_remote(repo: Path) -> None:
    with pytest.raises(GitError, match="no git remote 'origin'"):
        await GitWorkspace(repo).push("main")


async def test_push_raises_git_error_when_the_remote_is_unreachable(repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "add", "origin", str(tmp_path / "missing.git"))
    with pytest.raises(GitError, match="git push"):
        await GitWorkspace(repo).push("main")


async def test_changed_since_lists_files_changed_after_the_snapshot(repo: Path) -> None:
    (repo / "dirty_before.py").write_text("v1\n")
    (repo / "untouched_dirty.py").write_text("same\n")
    workspace = GitWorkspace(repo)
    before = await workspace.snapshot()
    assert set(before) == {"dirty_before.py", "untouched_dirty.py"}

    (repo / "dirty_before.py").write_text("v2\n")  # already dirty, changed again
    (repo / "README.md").write_text("# edited\n")
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / "new file.txt").write_text("x\n")
    assert await workspace.changed_since(before) == ["README.md", "dir with space/new file.txt", "dirty_before.py"]


async def test_changed_since_reports_deleted_files_and_nothing_when_unchanged(repo: Path) -> None:
    workspace = GitWorkspace(repo)
    before = await workspace.snapshot()
    assert before == {} and await workspace.changed_since(before) == []
    (repo / "README.md").unlink()
    assert await workspace.changed_since(before) == ["README.md"]
