"""The hostile agent against the entrypoint's git mode (the commit and push after the user's approval;
unconfined on the local runner, the git Job on Kubernetes): what it planted in the workspace's git
metadata, had it got there, runs none of its programs, and the step fails saying why it refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_images.conftest import ENTRYPOINT, base_env
from tests.security.git_attacks import (
    Planted,
    agent_program,
    configure_drivers,
    foreign_git_dir,
    plant_hook,
    use_drivers,
)
from tests.support import git, make_git_repo

SINGLE = {"action": "commit", "branch": "task/t1", "message": "task(t1): change a", "files": ["a.txt"],
          "trailer": "Jervis-Thread: t1"}
SERIES = {"action": "commit", "branch": "task/t1", "commits": [
    {"message": "goal 1", "trailer": "Jervis-Goal: g1", "files": ["a.txt"], "tree": None}]}


def git_mode(repo: Path, plan: dict[str, Any], **env: str) -> dict[str, Any]:
    """The entrypoint in git mode, as the local runner starts it; its result."""
    jervis = repo / ".jervis"
    jervis.mkdir(exist_ok=True)
    (jervis / "git.json").write_text(json.dumps({"remote": "origin", **plan}))
    environment = base_env(WORKSPACE_PATH=str(repo), AGENT_TYPE="", TASK_ID="t1", JERVIS_MODE="git",
                           ALLOW_GIT="true", **env)
    subprocess.run([sys.executable, str(ENTRYPOINT)], env=environment, cwd=repo, capture_output=True, text=True,
                   timeout=120, check=False)
    result: dict[str, Any] = json.loads((jervis / "result.json").read_text())
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_git_repo(tmp_path / "data" / "ws")
    (path / ".git" / "info" / "exclude").write_text(".jervis/\n")
    (path / "a.txt").write_text("approved change\n")
    return path


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    return agent_program(tmp_path / "agent")


def plain_git_runs_it(repo: Path, planted: Planted) -> bool:
    """The control: the same metadata does run the program for a plain `git add` (so each test can fail)."""
    if (repo / ".git").is_dir():
        (repo / ".git" / "info" / "attributes").unlink(missing_ok=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, capture_output=True, check=False)
    return planted.ran()


@pytest.mark.parametrize("plan", [SINGLE, SERIES], ids=["commit", "series"])
def test_a_commondir_redirect_is_refused_and_the_commit_runs_nothing(
        repo: Path, planted: Planted, tmp_path: Path, plan: dict[str, Any]) -> None:
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    (repo / ".git" / "commondir").write_text(f"{evil}\n")
    use_drivers(repo)
    head = git(repo, "rev-parse", "HEAD")

    result = git_mode(repo, plan)

    assert result["success"] is False and result["commitSha"] is None
    assert result["summary"].startswith("Refused: ") and ".git/commondir exists" in result["summary"]
    assert not planted.ran()
    assert git(repo, "rev-parse", "HEAD") == head
    assert plain_git_runs_it(repo, planted)


def test_a_commondir_redirect_is_refused_and_the_push_runs_nothing(
        repo: Path, planted: Planted, tmp_path: Path) -> None:
    """The agent's config names the remote: a local path whose `receivepack` is its program."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    receive = tmp_path / "agent" / "receive.sh"  # says it ran, then hangs up
    receive.write_text(f"#!/bin/sh\necho receive-pack >> {planted.marker}\nexit 1\n")
    receive.chmod(0o755)
    with (evil / "config").open("a") as handle:
        handle.write(f'[remote "origin"]\n\turl = {remote}\n\treceivepack = {receive}\n')
    (repo / ".git" / "commondir").write_text(f"{evil}\n")

    result = git_mode(repo, {"action": "push", "branch": "main"})

    assert result["success"] is False and "commondir exists" in result["summary"]
    assert not planted.ran()
    subprocess.run(["git", "push", "origin", "main:main"], cwd=repo, capture_output=True, check=False, timeout=60)
    assert planted.ran()  # the control: plain git's push runs it


def test_a_git_dir_replaced_by_a_gitdir_file_is_refused(repo: Path, planted: Planted, tmp_path: Path) -> None:
    evil = foreign_git_dir(tmp_path / "agent" / "evil.git", repo, planted)
    (repo / ".git").rename(tmp_path / "agent" / "moved-away")
    (repo / ".git").write_text(f"gitdir: {evil}\n")
    use_drivers(repo)

    result = git_mode(repo, SINGLE)

    assert result["success"] is False and "'gitdir:' file where the service made a git directory" in result["summary"]
    assert not planted.ran()
    assert plain_git_runs_it(repo, planted)


@pytest.mark.parametrize("plan", [SINGLE, SERIES], ids=["commit", "series"])
def test_filters_drivers_hooks_and_fsmonitor_in_the_repository_config_never_run(
        repo: Path, planted: Planted, plan: dict[str, Any]) -> None:
    """The commit goes through, with the file as the agent left it (no clean filter changed it)."""
    configure_drivers(repo / ".git" / "config", planted)
    plant_hook(repo / ".git", planted)
    use_drivers(repo)
    git(repo, "config", "--unset", "commit.gpgSign")  # signing is the user's own choice: not what is tested here

    result = git_mode(repo, plan)

    assert result["success"] is True, result["summary"]
    assert git(repo, "show", f"{result['commitSha']}:a.txt") == "approved change\n"
    assert not planted.ran()
    assert plain_git_runs_it(repo, planted)


def test_alternates_are_refused(repo: Path, tmp_path: Path) -> None:
    foreign = make_git_repo(tmp_path / "agent" / "objects-of-the-agent")
    (repo / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{foreign / '.git' / 'objects'}\n")
    head = git(repo, "rev-parse", "HEAD")

    result = git_mode(repo, SINGLE)

    assert result["success"] is False and "alternates exists" in result["summary"]
    assert git(repo, "rev-parse", "HEAD") == head


def test_an_info_attributes_the_service_did_not_write_is_refused(repo: Path, planted: Planted) -> None:
    configure_drivers(repo / ".git" / "config", planted)
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")

    result = git_mode(repo, SINGLE)

    assert result["success"] is False and "info/attributes was not written by the service" in result["summary"]
    assert not planted.ran()
    subprocess.run(["git", "add", "-A"], cwd=repo, capture_output=True, check=False)
    assert planted.ran()


def test_the_entrypoint_and_the_service_write_the_same_attributes() -> None:
    """The service refuses an `info/attributes` that is not its own: both must write the same bytes."""
    sys.path.insert(0, str(ENTRYPOINT.parent))
    try:
        from jervis_entrypoint.safe_git import ATTRIBUTES as ENTRYPOINT_ATTRIBUTES
    finally:
        sys.path.remove(str(ENTRYPOINT.parent))
    from app.agents.safe_git import ATTRIBUTES

    assert ENTRYPOINT_ATTRIBUTES == ATTRIBUTES and b"* !filter !diff !merge\n" in ATTRIBUTES
