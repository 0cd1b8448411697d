"""What of the data volume a Job mounts (app/agents/job_mounts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from app.agents.base import AgentJob
from app.agents.job_mounts import WorkspaceOutsideDataRootError, data_mounts, main_workspace, volume_path
from tests.support import git, make_git_repo


def mounts(root: Path, workspace: Path, mode: str = "agent") -> list[dict[str, object]]:
    job = AgentJob(thread_id="t", task_id="t", client_id="c", agent_type="aider", workspace=workspace,
                   mode=mode)  # type: ignore[arg-type]
    found: list[dict[str, object]] = ApiClient().sanitize_for_serialization(data_mounts(root, job))
    return found


def test_a_workspace_is_mounted_alone_with_its_git_directory_read_only(tmp_path: Path) -> None:
    workspace = make_git_repo(tmp_path / "clients" / "c" / "p")
    assert mounts(tmp_path, workspace) == [
        {"name": "data", "mountPath": str(workspace), "subPath": "clients/c/p"},
        {"name": "data", "mountPath": str(workspace / ".git"), "subPath": "clients/c/p/.git", "readOnly": True}]
    assert mounts(tmp_path, workspace, "commit") == mounts(tmp_path, workspace, "push") == [
        {"name": "data", "mountPath": str(workspace), "subPath": "clients/c/p"}]


def test_a_missing_or_symlinked_git_directory_is_not_mounted(tmp_path: Path) -> None:
    """The kubelet would create the one (an empty `.git` in the project) and follow the other
    anywhere inside the volume (another client's files)."""
    workspace = tmp_path / "clients" / "c" / "p"
    workspace.mkdir(parents=True)
    assert [m["subPath"] for m in mounts(tmp_path, workspace)] == ["clients/c/p"]
    (tmp_path / "clients" / "other").mkdir()
    (workspace / ".git").symlink_to(tmp_path / "clients" / "other")
    assert [m["subPath"] for m in mounts(tmp_path, workspace)] == ["clients/c/p"]


def test_a_goals_worktree_gets_the_main_workspaces_git_directory(tmp_path: Path) -> None:
    main = make_git_repo(tmp_path / "c" / "p")
    worktree = tmp_path / "c" / "p.jervis-goals" / "g1"
    git(main, "worktree", "add", "-q", "-b", "g1", str(worktree))
    assert main_workspace(worktree) == main and main_workspace(main) is None
    assert mounts(tmp_path, worktree) == [
        {"name": "data", "mountPath": str(worktree), "subPath": "c/p.jervis-goals/g1"},
        {"name": "data", "mountPath": str(worktree / ".git"), "subPath": "c/p.jervis-goals/g1/.git", "readOnly": True},
        {"name": "data", "mountPath": str(main / ".git"), "subPath": "c/p/.git", "readOnly": True}]
    assert mounts(tmp_path, worktree, "commit") == [
        {"name": "data", "mountPath": str(worktree), "subPath": "c/p.jervis-goals/g1"},
        {"name": "data", "mountPath": str(main / ".git"), "subPath": "c/p/.git"}]


@pytest.mark.parametrize("workspace", ["/data", "/elsewhere/p", "/data/../etc", "/data/c/../../etc"])
def test_nothing_but_a_folder_below_the_data_root_is_mounted(workspace: str) -> None:
    with pytest.raises(WorkspaceOutsideDataRootError):
        volume_path(Path("/data"), Path(workspace))
