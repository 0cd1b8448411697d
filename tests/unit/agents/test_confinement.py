"""Symlinks out of a workspace (app/agents/confinement.py, WorkspaceManager): the service's own
writes and deletions never follow one, and no agent starts on a workspace that has one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.agents import confinement
from app.agents.confinement import WorkspaceEscapeError
from app.agents.snapshots import SnapshotError, WorkspaceSnapshots
from app.agents.workspace import JERVIS_DIR, ResultFileError, StepBrief, UnsafeWorkspaceError, WorkspaceManager
from tests.support import git, make_git_repo


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Somewhere outside DATA_ROOT, with a file that must survive every test."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text("precious\n")
    return folder


@pytest.fixture
def manager(root: Path) -> WorkspaceManager:
    return WorkspaceManager(root)


@pytest.fixture
def repo(root: Path) -> Path:
    return make_git_repo(root / "clients" / "c1" / "p1")


def brief(agent_type: str = "claude") -> StepBrief:
    return StepBrief(agent_type=agent_type, instructions="# Do it\n", task={"id": "t1", "client_id": "c1"})


def untouched(outside: Path) -> bool:
    return (sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
            and (outside / "keep.txt").read_text() == "precious\n")


# ------------------------------------------------------------------ the check before an agent starts
@pytest.mark.parametrize("link", ["docs", "src/config.yml", "notes.md"])
async def test_a_workspace_with_a_symlink_leading_outside_is_refused(manager, repo, outside, link: str) -> None:
    target = outside if link == "docs" else outside / "keep.txt" if link == "notes.md" else outside / "new.yml"
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    (repo / link).symlink_to(target)

    with pytest.raises(UnsafeWorkspaceError) as refused:
        await manager.check_links(repo)

    assert f"{link} -> {target}" in str(refused.value) and "no agent runs on it" in str(refused.value)


async def test_a_symlink_into_another_workspace_under_data_root_is_refused(manager, root, repo) -> None:
    other = make_git_repo(root / "clients" / "c2" / "p1")
    (repo / "shared").symlink_to(other)
    (repo / ".gitignore").write_text("shared\n")  # ignored or not: another client's files

    with pytest.raises(UnsafeWorkspaceError, match="shared -> "):
        await manager.check_links(repo)


async def test_symlinks_that_stay_inside_the_workspace_pass(manager, repo) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "main.py").write_text("x = 1\n")
    (repo / "main.py").symlink_to("src/main.py")
    (repo / "lib").symlink_to(repo / "src")
    (repo / "loop").symlink_to("loop")  # leads nowhere: nothing can be written through it
    await manager.check_links(repo)


async def test_an_ignored_virtualenv_interpreter_link_outside_data_root_passes(manager, repo, outside) -> None:
    """`python -m venv .venv` links the interpreter of the machine; tests may run with it."""
    (repo / ".gitignore").write_text(".venv/\n")
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(outside / "keep.txt")
    await manager.check_links(repo)

    (repo / ".venv" / "lib").symlink_to(outside)  # a directory: files created below it land outside
    with pytest.raises(UnsafeWorkspaceError, match=r"\.venv/lib -> "):
        await manager.check_links(repo)


async def test_the_same_link_not_ignored_is_refused(manager, repo, outside) -> None:
    (repo / "python").symlink_to(outside / "keep.txt")
    with pytest.raises(UnsafeWorkspaceError, match="python -> "):
        await manager.check_links(repo)


async def test_a_git_symlink_out_of_the_workspace_is_refused_and_not_snapshotted(manager, root, outside) -> None:
    elsewhere = make_git_repo(outside / "real")
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / ".git").symlink_to(elsewhere / ".git")

    with pytest.raises(UnsafeWorkspaceError, match=r"\.git -> "):
        await manager.check_links(workspace)
    with pytest.raises(SnapshotError, match="symlink leading outside"):
        await WorkspaceSnapshots().ensure(workspace, "k1")
    assert not (elsewhere / ".git" / "jervis").exists()


# ------------------------------------------------------------------ the service's own writes
def test_prepare_replaces_a_jervis_symlink_with_its_own_directory(manager, repo, outside) -> None:
    (repo / JERVIS_DIR).symlink_to(outside)
    jervis = manager.prepare(repo, brief())
    assert jervis.is_dir() and not jervis.is_symlink() and (jervis / "instructions.md").exists()
    assert untouched(outside)


def test_prepare_writes_no_agent_file_through_a_dangling_symlink(manager, repo, outside) -> None:
    (repo / "CLAUDE.md").symlink_to(outside / "CLAUDE.md")  # dangling: exists() would say no
    manager.prepare(repo, brief())
    task = json.loads((repo / JERVIS_DIR / "task.json").read_text())
    assert "CLAUDE.md" not in task["agent_files"]  # the repository's own (link), left alone
    assert untouched(outside)


def test_prepare_refuses_an_agent_directory_that_leads_outside(manager, repo, outside) -> None:
    (repo / ".claude").symlink_to(outside)
    with pytest.raises(WorkspaceEscapeError, match=r"\.claude"):
        manager.prepare(repo, brief())
    assert untouched(outside)


def test_prepare_leaves_an_exclude_file_that_is_a_symlink_alone(manager, repo, outside) -> None:
    exclude = repo / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    exclude.symlink_to(outside / "keep.txt")
    manager.prepare(repo, brief())
    assert untouched(outside) and exclude.is_symlink()


def test_write_text_replaces_a_symlink_instead_of_writing_through_it(repo, outside) -> None:
    (repo / "notes.md").symlink_to(outside / "keep.txt")
    confinement.write_text(repo, "notes.md", "ours\n")
    assert not (repo / "notes.md").is_symlink() and (repo / "notes.md").read_text() == "ours\n"
    assert untouched(outside)


# ------------------------------------------------------------------ the service's own deletions
def test_cleanup_never_deletes_through_a_symlinked_directory(manager, repo, outside) -> None:
    manager.prepare(repo, brief())  # creates .claude/mcp.json and CLAUDE.md, listed in the manifest
    (repo / ".claude" / "mcp.json").unlink()
    (repo / ".claude").rmdir()
    (repo / ".claude").symlink_to(outside)  # the agent swapped the directory for a link out
    (outside / "mcp.json").write_text("theirs\n")

    manager.cleanup(repo)

    assert (outside / "mcp.json").read_text() == "theirs\n" and (outside / "keep.txt").exists()
    assert not (repo / "CLAUDE.md").exists() and not (repo / JERVIS_DIR).exists()


def test_cleanup_removes_a_jervis_symlink_itself_not_its_target(manager, repo, outside) -> None:
    manager.prepare(repo, brief("command"))
    confinement.remove_tree(repo, JERVIS_DIR)
    (repo / JERVIS_DIR).symlink_to(outside)

    manager.cleanup(repo)

    assert not (repo / JERVIS_DIR).exists() and not (repo / JERVIS_DIR).is_symlink()
    assert untouched(outside)


def test_a_result_file_that_is_a_symlink_is_no_result(manager, repo, outside) -> None:
    manager.prepare(repo, brief("command"))
    (outside / "result.json").write_text('{"success": true, "summary": "someone else\'s"}')
    (repo / JERVIS_DIR / "result.json").symlink_to(outside / "result.json")
    with pytest.raises(ResultFileError, match="symlink"):
        manager.read_result(repo)


async def test_undoing_a_step_never_deletes_through_a_symlink_the_agent_made(repo, outside) -> None:
    """The agent replaced src/ by a link out: the undo puts src/ back and leaves the target alone."""
    (repo / "src").mkdir()
    (repo / "src" / "keep.txt").write_text("ours\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "src")
    snapshots = WorkspaceSnapshots()
    base = (await snapshots.ensure(repo, "k1")).tree
    (repo / "src" / "keep.txt").unlink()
    (repo / "src").rmdir()
    (repo / "src").symlink_to(outside)

    await snapshots.restore(repo, base)

    assert (repo / "src").is_dir() and not (repo / "src").is_symlink()
    assert (repo / "src" / "keep.txt").read_text() == "ours\n"
    assert untouched(outside)


def test_read_inside_reads_a_regular_file_and_refuses_links_fifos_escapes_and_oversize(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "a").mkdir(parents=True)
    (workspace / "a" / "f").write_text("hi")
    secret = tmp_path / "secret"
    secret.write_text("s3cret")
    (workspace / "link").symlink_to(secret)
    (workspace / "dir").symlink_to(tmp_path)
    os.mkfifo(workspace / "fifo")

    assert confinement.read_inside(workspace, "a/f", max_bytes=10) == b"hi"
    assert confinement.read_text_inside(workspace, "a/f", max_bytes=2) == "hi"
    for rel in ("link", "dir/secret", "fifo", "../secret", "/etc/passwd"):
        with pytest.raises(confinement.UnsafeReadError):
            confinement.read_inside(workspace, rel, max_bytes=100)
    with pytest.raises(confinement.UnsafeReadError):
        confinement.read_inside(workspace, "a/f", max_bytes=1)
    with pytest.raises(FileNotFoundError):
        confinement.read_inside(workspace, "a/missing", max_bytes=1)
