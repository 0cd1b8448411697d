"""Placing a repository under DATA_ROOT and fetching the result back, on real git repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.agents.workspace import WorkspaceManager
from app.cli.workspace import PlacementError, changes, claim, fetch_back, place, workspace_name
from tests.support import git, make_git_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "My Project")


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    return tmp_path / "data"


def head(path: Path, ref: str = "HEAD") -> str:
    return git(path, "rev-parse", ref).strip()


def commit_file(path: Path, name: str, content: str, message: str) -> str:
    (path / name).write_text(content)
    git(path, "add", name)
    git(path, "commit", "-q", "-m", message)
    return head(path)


def test_first_run_clones_the_repository_under_the_data_root(repo: Path, data_root: Path) -> None:
    placed = place(repo, data_root)

    assert placed.is_git and placed.base == head(repo) and placed.notes == []
    assert placed.path == data_root / "cli" / workspace_name(repo) and placed.path.name.startswith("My_Project-")
    assert placed.relative == f"cli/{placed.path.name}"
    assert WorkspaceManager(data_root).resolve(placed.relative) == placed.path  # what the service accepts
    assert head(placed.path) == head(repo) and (placed.path / "README.md").read_text() == "# project\n"
    assert git(placed.path, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(placed.path, "config", "user.email").strip() == "dev@example.com"


def test_later_run_resets_the_clone_to_the_new_head_and_cleans_it(repo: Path, data_root: Path) -> None:
    placed = place(repo, data_root)
    (placed.path / "leftover.txt").write_text("from the last run")
    (placed.path / "README.md").write_text("changed by the last run")
    new = commit_file(repo, "app.py", "x = 1\n", "second")

    again = place(repo, data_root)

    assert again.path == placed.path and again.base == new == head(again.path)
    assert not (again.path / "leftover.txt").exists()
    assert (again.path / "README.md").read_text() == "# project\n" and (again.path / "app.py").exists()


def test_uncommitted_changes_are_left_out_with_a_warning_and_never_touched(repo: Path, data_root: Path) -> None:
    (repo / "README.md").write_text("work in progress")
    (repo / "draft.py").write_text("y = 2")
    status_before = git(repo, "status", "--porcelain")

    placed = place(repo, data_root)

    assert len(placed.notes) == 1 and "2 uncommitted change(s)" in placed.notes[0]
    assert (placed.path / "README.md").read_text() == "# project\n" and not (placed.path / "draft.py").exists()
    assert git(repo, "status", "--porcelain") == status_before


def test_a_subdirectory_stands_for_its_whole_repository(repo: Path, data_root: Path) -> None:
    (repo / "src").mkdir()
    placed = place(repo / "src", data_root)
    assert placed.source == repo.resolve() and "whole repository" in placed.notes[0]


def test_changes_list_new_and_modified_files_without_touching_the_clones_index(repo: Path, data_root: Path) -> None:
    placed = place(repo, data_root)
    (placed.path / "README.md").write_text("# project\nmore\n")
    (placed.path / "app").mkdir()
    (placed.path / "app" / "health.py").write_text("def health():\n    return 'ok'\n")

    found = changes(placed)

    assert found is not None and found.files == ["README.md", "app/health.py"]
    assert "2 files changed" in found.stat and "app/health.py" in found.stat
    assert git(placed.path, "diff", "--cached", "--name-only") == ""  # the real index is untouched
    assert "?? app/" in git(placed.path, "status", "--porcelain")


def test_fetch_back_creates_the_branch_without_checking_it_out(repo: Path, data_root: Path) -> None:
    placed = place(repo, data_root)
    git(placed.path, "checkout", "-q", "-b", "task/abc")
    sha = commit_file(placed.path, "health.py", "ok = True\n", "task(abc): health")
    before = (head(repo), git(repo, "rev-parse", "--abbrev-ref", "HEAD"), git(repo, "status", "--porcelain"))

    result = fetch_back(placed, "task/abc")

    assert result.fetched and result.command is None and "created" in result.message
    assert head(repo, "refs/heads/task/abc") == sha
    assert (head(repo), git(repo, "rev-parse", "--abbrev-ref", "HEAD"), git(repo, "status", "--porcelain")) == before
    assert not (repo / "health.py").exists()


def test_fetch_back_of_a_diverged_branch_prints_the_command_instead(repo: Path, data_root: Path) -> None:
    placed = place(repo, data_root)
    git(repo, "branch", "task/abc")
    git(repo, "checkout", "-q", "task/abc")
    mine = commit_file(repo, "mine.py", "mine = 1\n", "my own work")
    git(repo, "checkout", "-q", "main")
    git(placed.path, "checkout", "-q", "-b", "task/abc")
    theirs = commit_file(placed.path, "health.py", "ok = True\n", "task(abc): health")

    result = fetch_back(placed, "task/abc")

    assert not result.fetched and "not a fast-forward" in result.message
    assert head(repo, "refs/heads/task/abc") == mine  # the user's branch is kept
    assert result.command is not None and "+task/abc:task/abc" in result.command
    subprocess.run(result.command, shell=True, check=True, capture_output=True)
    assert head(repo, "refs/heads/task/abc") == theirs  # and the command does what it says


def test_fetch_back_says_when_the_branch_is_not_in_the_workspace(repo: Path, data_root: Path) -> None:
    result = fetch_back(place(repo, data_root), "task/missing")
    assert not result.fetched and "DATA_ROOT" in result.message


def test_plain_directory_is_copied_without_vcs_and_dependency_folders(tmp_path: Path, data_root: Path) -> None:
    source = tmp_path / "notes"
    for rel in ("a.txt", "sub/b.txt", ".venv/bin/python", "node_modules/x/index.js"):
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(rel)

    placed = place(source, data_root)
    (placed.path / "a.txt").write_text("changed by a run")
    again = place(source, data_root)

    assert not placed.is_git and placed.base is None and changes(placed) is None
    assert sorted(p.relative_to(again.path).as_posix() for p in again.path.rglob("*") if p.is_file()) == [
        "a.txt", "sub/b.txt"]
    assert (again.path / "a.txt").read_text() == "a.txt"  # a fresh copy each run


def test_a_data_root_inside_the_copied_directory_is_not_copied_into_itself(tmp_path: Path) -> None:
    source = tmp_path / "proj"
    (source / "src").mkdir(parents=True)
    (source / "src" / "x.py").write_text("x = 1")
    placed = place(source, source / ".data" / "workspaces")
    assert not (placed.path / ".data" / "workspaces").exists() and (placed.path / "src" / "x.py").exists()


def test_a_repository_without_commits_is_refused(tmp_path: Path, data_root: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(PlacementError, match="no commit"):
        place(empty, data_root)


def test_two_clients_never_share_a_workspace(repo: Path, data_root: Path) -> None:
    with claim(repo, data_root) as placed:
        with pytest.raises(PlacementError, match="another `jervis run`"), claim(repo / ".", data_root):
            pass
        assert placed.is_git
    with claim(repo, data_root):
        pass  # released
